// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace clairfs::cli {

// `clairfs status` for a human: a few lines from the status document.
// Keys it does not find are left out, so an older daemon's status still
// prints.
std::string status_summary(const nlohmann::json& status);

// Stage-in progress in one line: a bar, percent, bytes, rate and ETA.
std::string stage_line(const nlohmann::json& stage);

} // namespace clairfs::cli
