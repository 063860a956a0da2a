// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace clairfs::cli {

// `clairfs status --prometheus`: the status document in Prometheus' text
// exposition format (version 0.0.4), for node_exporter's textfile
// collector or any scraper. Every series carries mount="MOUNTPOINT", so one
// collector file per mount concatenates cleanly. Keys the status lacks
// (an older daemon, no SSD tier) leave their metrics out.
std::string prometheus_text(const nlohmann::json& status, const std::string& mountpoint);

} // namespace clairfs::cli
