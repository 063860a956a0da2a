// SPDX-License-Identifier: MIT
#include <map>
#include "clairfs/control/controller.hpp"

#include "clairfs/config/utf8_text.hpp"
#include "clairfs/index/resolve.hpp"
#include "clairfs/layout/framework_layout.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/process_ids.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace clairfs::control {
namespace {

// The process thread `tid` belongs to: a job's writer is its process,
// whichever of its threads wrote. The thread itself when that cannot be
// read (it is gone).
uint32_t process_of(uint32_t tid) {
    const uint32_t pid = sys::process_ids(tid).pid;
    return pid != 0 ? pid : tid;
}

// How many of job `id`'s processes still run, `writer` not counted: a
// job's only process may register it anew (a job registered at mount,
// registered again by its script); only other processes' jobs are kept.
size_t others_running(const prefetch::Engine& engine, const std::string& id, uint32_t writer) {
    std::vector<uint32_t> live = engine.live_processes(id);
    return static_cast<size_t>(
        std::ranges::count_if(live, [&](uint32_t p) { return p != writer; }));
}

// The job's planners and trackers, built before the lock; under it the
// engine only swaps pointers. Told `replay` first.
std::shared_ptr<prefetch::Engine::Active>
prepare_job(prefetch::Engine& engine, const std::string& id, std::vector<plan::Job>& resolved,
            std::span<const std::pair<index::NodeId, uint32_t>> replay) {
    chain_loaders(resolved);
    std::vector<std::shared_ptr<const plan::Job>> loaders;
    for (plan::Job& j : resolved) loaders.push_back(std::make_shared<const plan::Job>(std::move(j)));
    std::shared_ptr<prefetch::Engine::Active> prepared = engine.prepare(id, std::move(loaders));
    if (!replay.empty()) engine.replay(prepared, replay);
    return prepared;
}

} // namespace

Controller::Controller(const index::Index& idx, prefetch::Engine& engine)
    : index_(idx), engine_(engine) {
    if (idx.lookup(idx.node(index::root_id), ".clairfs"))
        LOG_WARN("the backing directory has its own .clairfs, which the control directory hides "
                 "in the mount");
}

// Far above a real manifest (1 GiB holds twenty million paths of 50
// bytes); the whole text is held while the dataset is built.
constexpr uint64_t max_manifest_bytes = uint64_t{1} << 30;

std::string Controller::read_manifest(const std::string& path, std::string& text) {
    std::string shown = "manifest '" + config::message_text(path) + "'";
    index::Resolved r = index::resolve_path(index_, index_.node(index::root_id), path);
    if (!r.node) return shown + ": " + std::string(index::describe(r.status));
    if (!S_ISREG(r.node->mode)) return shown + " is not a regular file";
    if (r.node->size > max_manifest_bytes) return shown + " is larger than 1 GiB";
    cache::BackingStore& store = engine_.backing();
    int fd = store.open_verified(*r.node);
    if (fd < 0) return shown + ": " + sys::error_text(fd);
    text.resize(r.node->size);
    ssize_t got = store.read_at(fd, text.data(), text.size(), 0);
    sys::close(fd);
    if (got < 0) return shown + ": " + sys::error_text(static_cast<int>(got));
    text.resize(static_cast<size_t>(got));
    return "";
}

int Controller::write_control(std::string_view text, std::string& why, uint32_t writer) {
    // Parsing, reading manifests and building datasets (seconds for
    // millions of files) happen before the lock, so status stays readable.
    ControlRequest req;
    why = parse_control(text, req);
    if (why.empty() && req.stage_only) {
        engine_.stage();
        std::lock_guard lock(mu_);
        error_.clear();
        return 0;
    }
    if (!why.empty()) return refuse(why);
    if (req.unregister) return unregister(req.job.id, why);
    const std::string id = req.job.id;
    req.job.writer = process_of(writer); // /proc is read here, before any lock
    int rv = register_job(std::move(req.job), req.stage, req.replace, why);
    // Bound after the registration took: each rank's process writes the
    // same one, which leaves the job as it was but still names its loader.
    if (rv >= 0 && req.from_loader && writer != 0) engine_.bind_loader(id, writer);
    return rv;
}

const JobRegistration* Controller::contested_by(const JobRegistration& job) const {
    for (const JobRegistration& j : active_)
        if (!j.detected && j.id == job.id) {
            // A script registering itself again may change its mind.
            if (j.writer != 0 && j.writer == job.writer) return nullptr;
            return job_json(j) == job_json(job) ? nullptr : &j;
        }
    return nullptr;
}

std::string Controller::busy_reason(const std::string& id, uint32_t writer, size_t live) {
    std::string by = writer != 0 ? "registered by pid " + std::to_string(writer) + ", " : "";
    return "job '" + id + "' is active (" + by + std::to_string(live) + " of its processes " +
           (live == 1 ? "still runs" : "still run") +
           "): add \"job\": \"<name>\" (--job) to register another job beside it, or "
           "\"replace\": true (--replace) to replace it";
}

int Controller::register_job(JobRegistration job, bool stage, bool replace, std::string& why,
                             std::span<const std::pair<index::NodeId, uint32_t>> replay,
                             const std::function<prefetch::Engine::Opens()>& late) {
    std::optional<uint32_t> held_by; // the contested job's writer: judged after the lock
    if (!job.detected && registered_unchanged(job, replace, held_by)) {
        LOG_INFO("job %s registered again, unchanged: it goes on as it was", job.id.c_str());
        if (stage) engine_.stage();
        return 0;
    }
    std::vector<plan::Job> resolved;
    size_t samples = 0;
    if (int rv = resolve_loaders(job, why, resolved, samples); rv < 0) return rv;
    // Judged once the registration is known valid (a bad one is refused for
    // what is wrong with it, EINVAL, whoever runs: stress_large's invalid
    // registrations got EBUSY), and before the planners are built. A job
    // nobody runs any more, or yet (a typo fixed before the job starts),
    // is no one's to keep.
    if (held_by) {
        if (size_t live = others_running(engine_, job.id, job.writer); live > 0) {
            why = busy_reason(job.id, *held_by, live);
            return refuse(why, EBUSY);
        }
    }
    std::shared_ptr<prefetch::Engine::Active> prepared =
        prepare_job(engine_, job.id, resolved, replay);
    const std::string id = job.id;
    const size_t count = job.loaders.size();
    const bool detected = job.detected;
    // What it replaces is freed after the lock: `replaced` outlives it.
    prefetch::Engine::Jobs replaced;
    int rv = activate(std::move(job), replace, std::move(prepared), late, replaced, why);
    if (rv < 0) return rv;
    LOG_INFO("job %s %s: %zu loader%s, %zu samples", id.c_str(),
             detected ? "detected and registered" : "registered", count, count == 1 ? "" : "s",
             samples);
    if (detector_ && !detected) detector_->reset();
    share_with_peers();
    if (stage) engine_.stage();
    return 0;
}

// The same registration again (each rank of a node writing it, as
// clairfs.register() in every process does) changes nothing while the
// job runs: replacing it would restart its tracking in the middle of an
// epoch. A retired job registered again starts afresh, as a new run.
// Otherwise `held_by` names the writer of the job it contests, if any.
bool Controller::registered_unchanged(const JobRegistration& job, bool replace,
                                      std::optional<uint32_t>& held_by) {
    std::string text = job_json(job);
    std::lock_guard lock(mu_);
    bool unchanged = std::ranges::any_of(active_, [&](const JobRegistration& j) {
        return !j.detected && j.id == job.id && job_json(j) == text;
    }) && engine_.is_active(job.id);
    if (unchanged) {
        error_.clear();
        ++registrations_;
    } else if (const JobRegistration* j = replace ? nullptr : contested_by(job)) {
        held_by = j->writer;
    }
    return unchanged;
}

// Each loader's dataset and plan; 0, or -EINVAL with `why` (refused as the
// control file's error for a written job).
int Controller::resolve_loaders(const JobRegistration& job, std::string& why,
                                std::vector<plan::Job>& resolved, size_t& samples) {
    for (const Registration& reg : job.loaders) {
        std::string manifest;
        plan::Job loader;
        if (layout::reads_manifest(reg.layout)) why = read_manifest(reg.manifest, manifest);
        if (why.empty()) why = resolve_job(reg, index_, std::move(manifest), loader);
        if (!why.empty()) {
            if (job.loaders.size() > 1) why = "loader '" + reg.root + "': " + why;
            // A detected job's refusal is detection's to report, not the
            // control file's last error.
            return job.detected ? -EINVAL : refuse(why);
        }
        samples += loader.dataset.samples.size();
        resolved.push_back(std::move(loader));
    }
    return 0;
}

// Under the lock: `prepared` goes live as `job`, the jobs it replaces into
// `replaced`. 0, or -EINVAL or -EBUSY with `why`.
int Controller::activate(JobRegistration job, bool replace,
                         std::shared_ptr<prefetch::Engine::Active> prepared,
                         const std::function<prefetch::Engine::Opens()>& late,
                         prefetch::Engine::Jobs& replaced, std::string& why) {
    const std::string id = job.id;
    const bool detected = job.detected;
    std::lock_guard lock(mu_);
    // A job written to the control file always wins over a detected
    // one, which never replaces a written one.
    if (detected &&
        std::ranges::any_of(active_, [](const JobRegistration& j) { return !j.detected; })) {
        why = "a job was registered meanwhile";
        return -EINVAL;
    }
    // Judged again: another process's job may have been registered, or
    // begun to run, while this one was built (two scripts started at
    // once). Signal-0 probes only, no I/O, under the lock.
    if (const JobRegistration* held = detected || replace ? nullptr : contested_by(job)) {
        if (size_t live = others_running(engine_, id, job.writer); live > 0) {
            why = busy_reason(id, held->writer, live);
            error_ = why;
            return -EBUSY;
        }
    }
    if (!detected) {
        for (const JobRegistration& j : active_) {
            if (!j.detected || j.id == id) continue;
            auto gone = engine_.deactivate(j.id);
            std::move(gone.begin(), gone.end(), std::back_inserter(replaced));
        }
        std::erase_if(active_, [](const JobRegistration& j) { return j.detected; });
    }
    auto swapped = engine_.activate(std::move(prepared), late);
    std::move(swapped.begin(), swapped.end(), std::back_inserter(replaced));
    std::erase_if(active_, [&](const JobRegistration& j) { return j.id == id; });
    active_.push_back(std::move(job));
    note_active();
    ++registrations_;
    if (!detected) error_.clear();
    return 0;
}

void Controller::enable_detection(DetectorOptions opt) {
    detector_ = std::make_unique<Detector>(
        index_, std::move(opt),
        [this](JobRegistration job, std::span<const std::pair<index::NodeId, uint32_t>> opens,
               const std::function<prefetch::Engine::Opens()>& late) {
            job.detected = true;
            std::string why;
            register_job(std::move(job), false, false, why, opens, late);
            return why;
        },
        [this] { return drop_finished_detected(); });
    Detector* d = detector_.get();
    // Beside a written job detection stays out: the user said what runs.
    engine_.set_open_observer([this, d](index::NodeId id, uint32_t pid) {
        if (only_detected_.load(std::memory_order_relaxed)) d->opened(id, pid);
    });
}

void Controller::note_active() {
    only_detected_.store(std::ranges::all_of(active_, [](const JobRegistration& j) {
                             return j.detected;
                         }),
                         std::memory_order_relaxed);
}

void Controller::start_detection() {
    if (detector_) detector_->start();
}

void Controller::stop_detection() {
    if (detector_) detector_->stop();
}

bool Controller::drop_finished_detected() {
    prefetch::Engine::Jobs dropped;
    {
        std::lock_guard lock(mu_);
        if (active_.empty() || !std::ranges::all_of(active_, [](const JobRegistration& j) {
                return j.detected;
            }))
            return false;
        if (engine_.active_jobs() > 0 && engine_.mode() != track::Mode::fallback) return false;
        dropped = engine_.deactivate();
        active_.clear();
        note_active();
    }
    share_with_peers();
    return true;
}

// `id` empty: every job.
int Controller::unregister(const std::string& id, std::string& why) {
    prefetch::Engine::Jobs dropped;
    {
        std::lock_guard lock(mu_);
        bool known = id.empty() || std::ranges::any_of(active_, [&](const JobRegistration& j) {
                         return j.id == id;
                     });
        if (!known) {
            why = "no job '" + id + "' is registered";
            error_ = why;
            return -EINVAL;
        }
        dropped = engine_.deactivate(id);
        std::erase_if(active_, [&](const JobRegistration& j) { return id.empty() || j.id == id; });
        note_active();
        error_.clear();
    }
    if (!dropped.empty())
        LOG_INFO("%s unregistered", id.empty() ? "every job" : ("job " + id).c_str());
    // Nothing registered now: detection watches new processes from here.
    if (detector_) detector_->reset();
    share_with_peers();
    return 0;
}

// The other daemons of a peer group check these against their own
// registrations (Engine::share_registrations).
void Controller::share_with_peers() {
    std::map<std::string, std::string> keys;
    std::map<std::string, std::vector<uint32_t>> ranks;
    {
        std::lock_guard lock(mu_);
        for (const JobRegistration& j : active_) {
            keys[j.id] = agreed_keys(j);
            if (!j.loaders.empty()) ranks[j.id] = j.loaders.front().ranks;
        }
    }
    engine_.share_registrations(std::move(keys), std::move(ranks));
}

int Controller::refuse(const std::string& why, int err) {
    // Not logged here: the caller says it where it belongs (the daemon's
    // log for control-file writes, stderr for mount --register).
    std::lock_guard lock(mu_);
    error_ = why;
    return -err;
}

// One job reads back as its registration; several as {"jobs": [...]},
// which documents them all but is not one registration to write back.
std::string Controller::control_text() const {
    std::lock_guard lock(mu_);
    if (active_.empty()) return "{}\n";
    if (active_.size() == 1) return job_json(active_.front());
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const JobRegistration& j : active_) all.push_back(nlohmann::ordered_json::parse(job_json(j)));
    nlohmann::ordered_json out;
    out["jobs"] = std::move(all);
    return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string Controller::status_text() const {
    nlohmann::json j;
    std::lock_guard lock(mu_);
    // false, true, or "detected" when every job registered was detected.
    bool all_detected = !active_.empty() && std::ranges::all_of(active_, [](const JobRegistration& r) {
                            return r.detected;
                        });
    j["registered"] = all_detected ? nlohmann::json("detected") : nlohmann::json(!active_.empty());
    j["error"] = error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(error_);
    j["registrations"] = registrations_;
    engine_.status(j);
    if (detector_) {
        detector_->status(j);
        // The detected registration, as the job could pin it; with several
        // (a training loader, a validation loader beside it), each of them.
        if (all_detected && active_.size() == 1)
            j["detection"]["registration"] = nlohmann::json::parse(job_json(active_.front()));
        if (all_detected && active_.size() > 1)
            for (const JobRegistration& r : active_)
                j["detection"]["registrations"].push_back(nlohmann::json::parse(job_json(r)));
    } else {
        j["detection"] = {{"state", "off"}};
    }
    if (status_part_) status_part_(j);
    // Reasons may quote file names that are not UTF-8.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace clairfs::control
