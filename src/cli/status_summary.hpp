// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace clairfs::cli {

// The value at a "/"-separated path of the status document, or null (a
// missing key, from an older daemon, reads as null).
const nlohmann::json& status_at(const nlohmann::json& status, const char* path);

// `clairfs status` for a human: a few lines from the status document.
// Keys it does not find are left out, so an older daemon's status still
// prints.
std::string status_summary(const nlohmann::json& status);

// "1.2 GiB": binary units, one decimal above bytes.
std::string bytes_text(double bytes);

// Stage-in progress in one line: a bar, percent, bytes, rate and ETA.
std::string stage_line(const nlohmann::json& stage);

} // namespace clairfs::cli
