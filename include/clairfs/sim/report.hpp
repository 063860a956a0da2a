// SPDX-License-Identifier: MIT
// What `clairfs simulate` prints and writes: a table per scenario and
// epoch for a person, JSON for a script, an SVG plot for a report.
#pragma once

#include "clairfs/sim/sim_config.hpp"
#include "clairfs/sim/simulation.hpp"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace clairfs::sim {

struct Report {
    const SimConfig& cfg;
    uint64_t dataset_bytes;
    uint64_t files;
    std::vector<ScenarioResult> scenarios;
    double peak_rss_mb = 0; // the simulator's own, when measured
};

std::string report_text(const Report& r);
nlohmann::json report_json(const Report& r);
// Epoch time and shared-FS bytes per epoch, one line per scenario.
std::string report_svg(const Report& r);

} // namespace clairfs::sim
