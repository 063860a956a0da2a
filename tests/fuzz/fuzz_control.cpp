// SPDX-License-Identifier: MIT
// A control-file write: judged as the daemon judges it (json_progress,
// parse_control), read back (registration_json must parse to the same
// registration) and resolved against a small index.
#include "clairfs/control/pending_write.hpp"
#include "clairfs/control/registration.hpp"
#include "fuzz_check.hpp"

using namespace clairfs;

namespace {

void check_round_trip(const control::Registration& reg) {
    std::string back = control::registration_json(reg);
    control::ControlRequest again;
    std::string why = control::parse_control(back, again);
    if (!why.empty()) fprintf(stderr, "read back:\n%s\nrefused: %s\n", back.c_str(), why.c_str());
    fuzz::require(why.empty(), "what the control file reads back is refused");
    fuzz::require(control::registration_json(again.loaders().front()) == back,
                  "what the control file reads back parses to another registration");
}

// A job of several loaders reads back as a list that parses to the same job.
void check_job_round_trip(const control::JobRegistration& job) {
    std::string back = control::job_json(job);
    control::ControlRequest again;
    std::string why = control::parse_control(back, again);
    if (!why.empty()) fprintf(stderr, "read back:\n%s\nrefused: %s\n", back.c_str(), why.c_str());
    fuzz::require(why.empty(), "what the control file reads back of a job is refused");
    fuzz::require(again.job.id == job.id, "a job read back has another id");
    fuzz::require(control::job_json(again.job) == back,
                  "what the control file reads back parses to another job");
}

void resolve(const control::Registration& reg) {
    plan::Job job;
    std::string why =
        control::resolve_job(reg, fuzz::small_index(), "train/cat/1.jpg\ntrain/dog/4.jpg\n", job);
    fuzz::require_one_line(why);
    if (why.empty()) fuzz::require(!job.dataset.samples.empty(), "a job without samples");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text = fuzz::as_text(data, size);
    (void)control::json_progress(text);
    control::ControlRequest req;
    std::string why = control::parse_control(text, req);
    fuzz::require_one_line(why);
    if (!why.empty() || req.unregister || req.stage_only) return 0;
    fuzz::require(!req.loaders().empty(), "a registration without a loader");
    for (const auto& reg : req.loaders()) {
        check_round_trip(reg);
        resolve(reg);
    }
    check_job_round_trip(req.job);
    return 0;
}
