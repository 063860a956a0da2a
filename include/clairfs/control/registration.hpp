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
    std::string manifest;      // layout list: a file inside the mount, relative to the mount root
    std::optional<uint64_t> n; // len(dataset) as the job sees it, checked if given
};

// spec.epochs when the registration gives none: predict until the job
// stops (the largest count order::validate accepts).
inline constexpr uint32_t unlimited_epochs = 100000;

struct ControlRequest {
    bool unregister = false; // {} or {"unregister": true}
    bool stage = false;      // "stage": true: begin a stage-in pass
    bool stage_only = false; // {"stage": true}: nothing else to do
    Registration registration;
};

// Parses one control-file write. Returns "" or a one-line reason (not JSON,
// not an object, unknown key, wrong type, out of range).
std::string parse_control(std::string_view text, ControlRequest& out);

// Checks a parsed registration against the mount's index and builds the
// dataset: the root must exist, the layout must yield samples (and n of
// them if `n` was given), the sampler must accept that many for every rank.
// `manifest` is the text of reg.manifest for layout list (the caller reads
// it: resolving is pure). "" or the reason; `out` is only set on success.
std::string resolve_job(const Registration& reg, const index::Index& idx, std::string_view manifest,
                        plan::Job& out);

// The registration as a JSON object with every key (defaults filled in),
// pretty-printed with a trailing newline: what reading the control file
// returns, and what parse_control accepts back unchanged.
std::string registration_json(const Registration& reg);

} // namespace clairfs::control
