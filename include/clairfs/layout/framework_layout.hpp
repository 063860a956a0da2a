// SPDX-License-Identifier: MIT
// Which layout numbers a job's samples: chosen by the user for PyTorch
// (imagefolder unless told), fixed by the pipeline for TensorFlow, which
// lists files its own way (keras_directory, glob).
#pragma once

#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/job_spec.hpp"

#include <optional>
#include <string>

namespace clairfs::layout {

// "" and `out` set, or the reason a given layout does not fit the job.
std::string layout_for_job(const order::JobSpec& spec, std::optional<LayoutKind> given,
                           LayoutKind& out);

// The name parse_layout() reads back.
const char* layout_name(LayoutKind k);
// Whether the layout's samples come from a manifest file (list, ranges).
inline bool reads_manifest(LayoutKind k) { return k == LayoutKind::list || k == LayoutKind::ranges; }

} // namespace clairfs::layout
