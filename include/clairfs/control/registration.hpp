// SPDX-License-Identifier: MIT
// What a job writes to .clairfs/control (and `clairfs register` or
// `clairfs mount --register FILE` write for it): the keys of `clairfs
// order`, `ranks` instead of `rank`, and where the dataset is. The schema is
// documented in clairfs-control(5).
#pragma once

#include "clairfs/index/index.hpp"
#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/job_spec.hpp"
#include "clairfs/plan/job.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::control {

struct Registration {
    order::JobSpec spec;            // spec.rank unused
    bool epochs_given = false;      // absent: predict until the job stops
    std::vector<uint32_t> ranks{0}; // the job's ranks whose loaders run on this node
    std::string root;               // dataset directory relative to the mount root; "" = the root
    layout::LayoutKind layout = layout::LayoutKind::imagefolder;
    bool layout_given = false; // else chosen by framework and pipeline
    std::string manifest;      // layout list: a file inside the mount, relative to the mount root
    std::optional<uint64_t> n; // len(dataset) as the job sees it, checked if given
    // How far a search for the seed goes when an epoch's first opens fit
    // no prediction (32-bit draws of the global generator, or seed + epoch
    // values of a DistributedSampler); 0: never search, fall back.
    uint64_t resync_draws = 4096;
    // How far down the global generator's chain the first epoch whose
    // opens fit nothing is searched (a model's initialisation between
    // manual_seed and the loader: one draw per parameter); 0: only
    // resync_draws. RandomSampler on the global generator only.
    uint64_t pre_draws_max = plan::deep_chain_words;
};

// The job a registration without "job" names.
inline constexpr const char* default_job = "default";

// One job: its loaders, in the order they run in an epoch (a training
// loader, then a validation loader).
struct JobRegistration {
    std::string id = default_job;
    std::vector<Registration> loaders;
    bool listed = false; // written as a list of loaders: read back as one
    bool detected = false; // registered by job detection, not written by the job
    // The process that wrote it (the thread group of the writing thread),
    // 0 if unknown (mount --register) or detected: it may replace its own
    // job while the job's processes run, another process may not.
    uint32_t writer = 0;
};

// spec.epochs when the registration gives none: predict until the job
// stops (the largest count order::validate accepts).
inline constexpr uint32_t unlimited_epochs = 100000;

struct ControlRequest {
    bool unregister = false; // {} or {"unregister": true}: every job; with "job": that one
    bool stage = false;      // "stage": true: begin a stage-in pass
    bool stage_only = false; // {"stage": true}: nothing else to do
    // "from_loader": true: the process writing the registration is the
    // job's loader process (clairfs.register() in the training script), so
    // its opens and READs, and its workers', are this job's.
    bool from_loader = false;
    // "replace": true: replaces an active job of the same id even while
    // processes other than its writer run it (Controller::register_job).
    bool replace = false;
    JobRegistration job;     // job.id names the job to unregister, if any
    std::vector<Registration>& loaders() { return job.loaders; }
};

// Parses one control-file write: a registration object, a list of loader
// objects, or an object whose "loaders" list each take its other keys as
// defaults. Returns "" or a one-line reason (not JSON, not an object,
// unknown key, wrong type, out of range).
std::string parse_control(std::string_view text, ControlRequest& out);

// Whether `id` may name a job: 1 to 64 of [A-Za-z0-9._-].
bool valid_job_id(std::string_view id);

// Checks a parsed registration against the mount's index and builds the
// dataset: the root must exist, the layout must yield samples (and n of
// them if `n` was given), the sampler must accept that many for every rank.
// `manifest` is the text of reg.manifest for layouts list and ranges (the
// caller reads it: resolving is pure), given up to be let go once parsed.
// "" or the reason; `out` is only set on success.
std::string resolve_job(const Registration& reg, const index::Index& idx, std::string manifest,
                        plan::Job& out);

// The loaders of one job take turns in each epoch, in the order listed, and
// each pass of each draws from torch's global generator: its iterator's
// base_seed unless the loader has its own generator, and a RandomSampler's
// seed. Adds those draws to the pre_draws and between_draws of the loaders
// whose order depends on that generator, so a training loader's epochs are
// predicted with the validation passes between them. Persistent workers
// draw only once, which this does not model: the search covers them.
void chain_loaders(std::vector<plan::Job>& loaders);

// The registration as a JSON object with every key (defaults filled in),
// pretty-printed with a trailing newline: what reading the control file
// returns, and what parse_control accepts back unchanged.
std::string registration_json(const Registration& reg);

// A job as reading the control file shows it, and parse_control accepts
// back: its one loader's object ("job" added unless it is the default job),
// or the list of its loaders' objects.
std::string job_json(const JobRegistration& job);

// What the nodes of a peer group must agree on for job `job`: every
// loader's keys but its ranks (each node registers its own ranks), one
// line of JSON, equal on two nodes exactly when their jobs agree.
std::string agreed_keys(const JobRegistration& job);

} // namespace clairfs::control
