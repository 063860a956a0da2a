// SPDX-License-Identifier: MIT
#include "clairfs/sim/report.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace clairfs::sim {
namespace {

std::string fmt(const char* f, double v) {
    char b[64];
    snprintf(b, sizeof b, f, v);
    return b;
}

std::string bytes(double v) {
    if (v >= 1e12) return fmt("%.2f TB", v / 1e12);
    if (v >= 1e9) return fmt("%.2f GB", v / 1e9);
    if (v >= 1e6) return fmt("%.1f MB", v / 1e6);
    return fmt("%.0f KB", v / 1e3);
}

double pct(uint64_t part, uint64_t whole) { return whole ? 100.0 * part / whole : 0; }

// The run's name, cluster, dataset and links, then the table's heading.
std::string text_head(const Report& r) {
    const SimConfig& c = r.cfg;
    std::string out;
    out += "clairfs simulate: " + (c.name.empty() ? c.path : c.name) + "\n";
    out += fmt("  %.0f nodes", c.cluster.nodes) +
           fmt(" x %.0f ranks", c.cluster.ranks_per_node) +
           fmt(", %.0f loader workers each", c.job.num_workers) +
           fmt(", batch %.0f", c.job.batch_size) + fmt(", %.0f epochs\n", c.job.epochs);
    out += fmt("  dataset %.0f files, ", double(r.files)) + bytes(double(r.dataset_bytes)) +
           "; per node RAM " + bytes(double(c.node.ram)) +
           (c.node.ssd ? ", SSD " + bytes(double(c.node.ssd)) : std::string(", no SSD")) + "\n";
    out += "  shared FS " + bytes(c.shared_fs.bandwidth) + "/s" +
           fmt(", %.0f IOPS", c.shared_fs.iops) + ", " +
           bytes(c.shared_fs.client_bandwidth) + "/s per node; network " +
           bytes(c.network.bandwidth) + "/s per node\n\n";
    out += "scenario        epoch   time s  stall s  x direct  shared-FS      FS reqs  "
           "peer         RAM hit  waited  SSD   peer   FS\n";
    return out;
}

// Epoch e of scenario s, its time against the direct scenario's if run.
std::string epoch_row(const ScenarioResult& s, size_t e, const ScenarioResult* direct) {
    const EpochResult& x = s.epochs[e];
    std::string vs = direct && direct->epochs[e].seconds > 0
                         ? fmt("%8.2f", x.seconds / direct->epochs[e].seconds)
                         : "       -";
    char line[320];
    snprintf(line, sizeof line,
             "%-15s %5zu %8.1f %8.1f  %s  %-13s %9.0f  %-12s %5.1f%% %6.1f%% %4.1f%% "
             "%5.1f%% %5.1f%%\n",
             e == 0 ? scenario_name(s.scenario) : "", e, x.seconds, x.stall_s, vs.c_str(),
             bytes(double(x.fs_bytes)).c_str(), x.fs_requests,
             bytes(double(x.peer_bytes)).c_str(), pct(x.ram_hits + x.page_cache_hits, x.opens),
             pct(x.waited, x.opens), pct(x.from_ssd, x.opens), pct(x.from_peer, x.opens),
             pct(x.from_fs, x.opens));
    return line;
}

// Under a scenario's epochs: the shared FS's bytes over the run, the
// homes that pin their files (peers), and the simulator's own time.
std::string scenario_footer(const Report& r, const ScenarioResult& s) {
    const uint32_t nodes = r.cfg.cluster.nodes;
    uint64_t fs = 0;
    for (const auto& x : s.epochs) fs += x.fs_bytes;
    std::string out = std::string(15, ' ') + fmt("shared FS over the run: %.3fx the dataset",
                                                 r.dataset_bytes ? double(fs) / r.dataset_bytes
                                                                 : 0);
    if (s.scenario == Scenario::clairfs_peers)
        out += fmt("; %.0f", double(s.pinned_nodes)) +
               fmt(" of %.0f homes pin their files", nodes) + " (all do from --mem " +
               bytes(double(std::max(s.max_here_bytes, (r.dataset_bytes + nodes - 1) / nodes))) +
               ")";
    out += fmt(" (simulated in %.1f s)\n", s.wall_s);
    return out;
}

nlohmann::json config_json(const Report& r) {
    const SimConfig& c = r.cfg;
    return {{"name", c.name},
            {"path", c.path},
            {"nodes", c.cluster.nodes},
            {"ranks_per_node", c.cluster.ranks_per_node},
            {"ram_bytes", c.node.ram},
            {"ssd_bytes", c.node.ssd},
            {"epochs", c.job.epochs},
            {"batch_size", c.job.batch_size},
            {"num_workers", c.job.num_workers}};
}

nlohmann::json epoch_json(const EpochResult& x, size_t e) {
    return {{"epoch", e},
            {"seconds", x.seconds},
            {"stall_s", x.stall_s},
            {"shared_fs_bytes", x.fs_bytes},
            {"shared_fs_requests", x.fs_requests},
            {"shared_fs_files", x.fs_files},
            {"peer_bytes", x.peer_bytes},
            {"peer_files", x.peer_files},
            {"opens", x.opens},
            {"ram_hits", x.ram_hits},
            {"page_cache_hits", x.page_cache_hits},
            {"waited", x.waited},
            {"from_ssd", x.from_ssd},
            {"from_peer", x.from_peer},
            {"from_fs", x.from_fs},
            {"evictions", x.evictions},
            {"evicted_unopened", x.evicted_unopened}};
}

nlohmann::json scenario_json(const ScenarioResult& s) {
    nlohmann::json js{{"scenario", scenario_name(s.scenario)},
                      {"wall_s", s.wall_s},
                      {"events", s.events}};
    if (s.scenario == Scenario::clairfs_peers) {
        js["pinned_nodes"] = s.pinned_nodes;
        js["max_here_bytes"] = s.max_here_bytes;
    }
    auto& es = js["epochs"] = nlohmann::json::array();
    for (size_t e = 0; e < s.epochs.size(); ++e) es.push_back(epoch_json(s.epochs[e], e));
    return js;
}

// The plot: two panels side by side, epoch seconds and shared-FS GB per
// epoch, a line per scenario in its colour.
const char* const colours[] = {"#555555", "#d62728", "#1f77b4", "#2ca02c"};
constexpr int W = 900, H = 360, pad = 50, pw = (W - 3 * pad) / 2, ph = H - 2 * pad;

// The frame of a panel at x0: its title and its scale from 0 to ymax.
void panel_frame(std::string& o, int x0, const char* title, double ymax) {
    o += fmt("<text x=\"%.0f\"", x0) + fmt(" y=\"%.0f\">", pad - 20) + title + "</text>\n";
    o += fmt("<rect x=\"%.0f\"", x0) + fmt(" y=\"%.0f\"", pad) + fmt(" width=\"%.0f\"", pw) +
         fmt(" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", ph);
    o += fmt("<text x=\"%.0f\"", x0 - 5) + fmt(" y=\"%.0f\" text-anchor=\"end\">", pad + 4) +
         fmt("%.3g</text>\n", ymax);
    o += fmt("<text x=\"%.0f\"", x0 - 5) +
         fmt(" y=\"%.0f\" text-anchor=\"end\">0</text>\n", pad + ph);
}

// A panel at x0: its frame, the epochs along it, and each scenario's
// value(epoch) as a line.
template <class Value>
void panel(std::string& o, const Report& r, size_t ne, int x0, const char* title, double ymax,
           Value value) {
    panel_frame(o, x0, title, ymax);
    auto X = [&](size_t e) { return x0 + (ne > 1 ? pw * double(e) / (ne - 1) : pw / 2.0); };
    for (size_t e = 0; e < ne; ++e)
        o += fmt("<text x=\"%.1f\"", X(e)) + fmt(" y=\"%.0f\" text-anchor=\"middle\">", pad + ph + 15) +
             fmt("epoch %.0f</text>\n", double(e));
    for (size_t i = 0; i < r.scenarios.size(); ++i) {
        const auto& s = r.scenarios[i];
        std::string pts;
        for (size_t e = 0; e < s.epochs.size(); ++e)
            pts += fmt("%.1f,", X(e)) + fmt("%.1f ", pad + ph - ph * value(s.epochs[e]) / ymax);
        o += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" +
             std::string(colours[static_cast<int>(s.scenario)]) + "\" points=\"" + pts + "\"/>\n";
    }
}

} // namespace

std::string report_text(const Report& r) {
    std::string out = text_head(r);
    const ScenarioResult* direct = nullptr;
    for (const auto& s : r.scenarios)
        if (s.scenario == Scenario::direct) direct = &s;
    for (const auto& s : r.scenarios) {
        for (size_t e = 0; e < s.epochs.size(); ++e) out += epoch_row(s, e, direct);
        out += scenario_footer(r, s);
    }
    out += "\nRAM hit: opened from clairfs's RAM (direct: the page cache); waited: on a "
           "prefetch still\nin flight; SSD, peer, FS: missed, read from there. Model and "
           "assumptions: clairfs(1), SIMULATE.\n";
    return out;
}

nlohmann::json report_json(const Report& r) {
    nlohmann::json j;
    j["config"] = config_json(r);
    j["dataset"] = {{"files", r.files}, {"bytes", r.dataset_bytes}};
    if (r.peak_rss_mb > 0) j["peak_rss_mb"] = r.peak_rss_mb;
    auto& ss = j["scenarios"] = nlohmann::json::array();
    for (const auto& s : r.scenarios) ss.push_back(scenario_json(s));
    return j;
}

std::string report_svg(const Report& r) {
    size_t ne = 0;
    double tmax = 0, bmax = 0;
    for (const auto& s : r.scenarios) {
        ne = std::max(ne, s.epochs.size());
        for (const auto& x : s.epochs) {
            tmax = std::max(tmax, x.seconds);
            bmax = std::max(bmax, x.fs_bytes / 1e9);
        }
    }
    tmax = tmax > 0 ? tmax * 1.1 : 1;
    bmax = bmax > 0 ? bmax * 1.1 : 1;
    std::string o = fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\"", W) +
                    fmt(" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", H);
    o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    panel(o, r, ne, pad, "slowest rank's epoch, s", tmax,
          [](const EpochResult& x) { return x.seconds; });
    panel(o, r, ne, 2 * pad + pw, "shared file system read per epoch, GB", bmax,
          [](const EpochResult& x) { return x.fs_bytes / 1e9; });
    for (size_t i = 0; i < r.scenarios.size(); ++i) {
        int s = static_cast<int>(r.scenarios[i].scenario);
        o += fmt("<text x=\"%.0f\"", pad + 150.0 * i) + fmt(" y=\"%.0f\" fill=\"", H - 8) +
             colours[s] + "\">" + scenario_name(r.scenarios[i].scenario) + "</text>\n";
    }
    o += "</svg>\n";
    return o;
}

} // namespace clairfs::sim
