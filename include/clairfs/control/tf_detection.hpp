// SPDX-License-Identifier: MIT
// Zero configuration for tf.data jobs (issue 47, item 3): the Detector
// asks this when no torch loader explains the opens. The candidate roots
// are listed as image_dataset_from_directory (layout keras_directory) and
// as list_files (layout glob, the pattern the opened files' depth and
// extension suggest) lists them, and order::detect_tf_job looks for the
// pipeline; what it finds comes back as the registration the job would
// have written.
#pragma once

#include "clairfs/control/registration.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/order/job_detect.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace clairfs::control {

struct TfDetection {
    JobRegistration job;        // one loader, framework tensorflow
    std::vector<uint32_t> pids; // the processes (tf.data's threads) it explains
    uint64_t opens = 0;         // distinct files they opened where it predicts
    std::string what;           // one line for status and the log
};

struct TfAttempt {
    std::optional<TfDetection> found;
    // A pipeline fits every open, but too few to tell it from chance: how
    // many distinct opens would do (0: none fits).
    uint64_t opens_needed = 0;
    uint64_t candidates = 0; // orders computed
};

using OpenedNodes = std::vector<std::pair<uint32_t, std::span<const index::NodeId>>>;

// `roots`: directories the opens may belong to (Detector::roots()), each
// tried once; `opened`: each process's opens, in order; `first`: the
// first files opened, in the order opened across processes (the evidence:
// order::detect_tf_job; not all of them: a whole epoch opened before the
// search ran would fit every candidate's first iterator as a set, and
// costs more to judge). Uses the seeds and the cancel flag of `search`.
// The job found claims every process that opened one of its files.
TfAttempt detect_tf_pipeline(const index::Index& idx, const std::vector<std::string>& roots,
                             const OpenedNodes& opened, std::span<const index::NodeId> first,
                             const order::DetectOptions& search);

} // namespace clairfs::control
