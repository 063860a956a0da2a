// SPDX-License-Identifier: MIT
// `clairfs simulate --config FILE`: what clairfs would do on a cluster,
// before anyone pays for the allocation (clairfs(1), SIMULATE).
#include "clairfs/cli/commands.hpp"
#include "clairfs/order/job_spec.hpp"
#include "clairfs/sim/report.hpp"
#include "clairfs/sim/simulation.hpp"
#include "order_args.hpp"
#include "order_dataset.hpp"

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sys/resource.h>
#include <unistd.h>

namespace clairfs::cli {
namespace {

void print_simulate_help() {
    printf("usage: clairfs simulate --config FILE [--json FILE] [--plot FILE.svg]\n"
           "                        [--scenarios LIST] [--quiet]\n\n"
           "Predicts, per epoch and scenario (local-warm, direct, clairfs, clairfs-peers),\n"
           "the epoch time, the training loop's stall, the shared file system's bytes and\n"
           "requests, the bytes moved between nodes and where each open found its file.\n"
           "The orders, home placement, prefetch window, eviction and source choice are\n"
           "clairfs's own code; only time is modelled (man clairfs, SIMULATE).\n\n"
           "  --config FILE      the cluster, file system, network, dataset and job (JSON;\n"
           "                     examples in config/simulate-*.json)\n"
           "  --json FILE        also write the results as JSON ('-': standard output,\n"
           "                     instead of the table)\n"
           "  --plot FILE        also write epoch times and shared-FS bytes as an SVG plot\n"
           "  --scenarios LIST   comma-separated, instead of the config's\n"
           "  --quiet            no progress on standard error\n");
}

int simulate_usage_error(const std::string& why) {
    fprintf(stderr, "clairfs: %s (see clairfs simulate --help)\n", why.c_str());
    return exit_usage;
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        fprintf(stderr, "clairfs: cannot write '%s'\n", path.c_str());
        return false;
    }
    return true;
}

// A real dataset directory's sizes, in the order the job numbers its
// samples: scanned and laid out as `clairfs order --root` does.
int root_sizes(const sim::SimConfig& cfg, std::vector<uint32_t>& sizes) {
    OrderArgs a;
    a.spec = cfg.job;
    a.root = cfg.dataset.root;
    if (!cfg.dataset.layout.empty()) a.layout = cfg.dataset.layout;
    OrderDataset ds;
    if (LoadFailure f = load_order_dataset(a, ds); !f.message.empty()) {
        fprintf(stderr, "clairfs: dataset.root: %s\n", f.message.c_str());
        return f.usage ? exit_usage : exit_failure;
    }
    sizes.resize(ds.size());
    for (uint64_t s = 0; s < sizes.size(); ++s) {
        uint64_t bytes = 0;
        if (!ds.file_size(static_cast<order::Sample>(s), bytes)) {
            fprintf(stderr, "clairfs: dataset.root: sample %llu (%s) opens no file\n",
                    static_cast<unsigned long long>(s),
                    ds.path(static_cast<order::Sample>(s)).c_str());
            return exit_failure;
        }
        // Sizes are 32-bit here; a sample of 4 GiB or more is one clairfs
        // does not tier anyway.
        sizes[s] = static_cast<uint32_t>(std::clamp<uint64_t>(bytes, 1, 0xFFFFFFFEu));
    }
    return exit_ok;
}

struct SimulateArgs {
    std::string config_path, json_out, plot, scenarios;
    bool quiet = false;
};

// The command line into `out`; an exit code when the command ends here
// (--help, or a usage error).
std::optional<int> parse_simulate_args(const std::vector<std::string>& args, SimulateArgs& out) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            print_simulate_help();
            return exit_ok;
        } else if (a == "--quiet") {
            out.quiet = true;
        } else if (a == "--config" || a == "--json" || a == "--plot" || a == "--scenarios") {
            std::string& value = a == "--config" ? out.config_path
                                 : a == "--json" ? out.json_out
                                 : a == "--plot" ? out.plot
                                                 : out.scenarios;
            if (i + 1 >= args.size()) return simulate_usage_error(a + " needs a value");
            value = args[++i];
        } else {
            return simulate_usage_error("unknown argument '" + a + "'");
        }
    }
    if (out.config_path.empty()) return simulate_usage_error("--config FILE is required");
    return std::nullopt;
}

// --scenarios: the comma-separated names in place of the config's.
std::string override_scenarios(const std::string& list, sim::SimConfig& cfg) {
    cfg.scenarios.clear();
    size_t at = 0;
    for (;;) {
        size_t comma = list.find(',', at);
        std::string name = list.substr(at, comma == std::string::npos ? comma : comma - at);
        if (auto why = sim::add_scenario(name, cfg.scenarios); !why.empty())
            return "--scenarios: " + why;
        if (comma == std::string::npos) return "";
        at = comma + 1;
    }
}

// The config and the dataset's sizes, checked against the job.
int load_config(const SimulateArgs& a, sim::SimConfig& cfg, std::vector<uint32_t>& sizes) {
    if (auto why = sim::load_sim_config(a.config_path, cfg); !why.empty()) {
        fprintf(stderr, "clairfs: %s\n", why.c_str());
        return exit_usage;
    }
    if (!a.scenarios.empty())
        if (auto why = override_scenarios(a.scenarios, cfg); !why.empty())
            return simulate_usage_error(why);
    if (!cfg.dataset.root.empty()) {
        if (int rc = root_sizes(cfg, sizes); rc != exit_ok) return rc;
    } else if (auto why = sim::dataset_sizes(cfg, sizes); !why.empty()) {
        fprintf(stderr, "clairfs: %s\n", why.c_str());
        return exit_usage;
    }
    if (auto why = order::validate(cfg.job, sizes.size()); !why.empty()) {
        fprintf(stderr, "clairfs: %s: job: %s\n", a.config_path.c_str(), why.c_str());
        return exit_usage;
    }
    if (auto why = sim::check_job(cfg, sizes.size()); !why.empty()) {
        fprintf(stderr, "clairfs: %s: %s\n", a.config_path.c_str(), why.c_str());
        return exit_usage;
    }
    return exit_ok;
}

// Every scenario in turn, with progress on standard error unless --quiet
// (rewritten in place on a terminal, a line each otherwise).
sim::Report run_scenarios(const sim::SimConfig& cfg, const std::vector<uint32_t>& sizes,
                          bool quiet) {
    const bool progress_tty = !quiet && isatty(STDERR_FILENO);
    sim::Progress progress;
    if (!quiet)
        progress = [&cfg, progress_tty](sim::Scenario s, uint32_t epoch, double done) {
            fprintf(stderr, progress_tty ? "\r  %-14s epoch %u of %u, %3.0f%% of its opens   "
                                         : "  %-14s epoch %u of %u, %3.0f%% of its opens\n",
                    sim::scenario_name(s), epoch + 1, cfg.job.epochs, 100 * done);
            fflush(stderr);
        };
    sim::Report report{cfg, std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}),
                       sizes.size(), {}};
    for (sim::Scenario s : cfg.scenarios) {
        if (!quiet) fprintf(stderr, "simulating %s...\n", sim::scenario_name(s));
        report.scenarios.push_back(sim::simulate(cfg, sizes, s, progress));
        if (progress_tty) fprintf(stderr, "\n");
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    report.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
    return report;
}

// The table on standard output (unless --json -), the JSON and the plot.
int write_report(const sim::Report& report, const SimulateArgs& a) {
    if (a.json_out != "-") printf("%s", sim::report_text(report).c_str());
    if (!a.json_out.empty()) {
        std::string j = sim::report_json(report).dump(2) + "\n";
        if (a.json_out == "-")
            printf("%s", j.c_str());
        else if (!write_file(a.json_out, j))
            return exit_failure;
    }
    if (!a.plot.empty() && !write_file(a.plot, sim::report_svg(report))) return exit_failure;
    return exit_ok;
}

} // namespace

int simulate_command(const std::vector<std::string>& args) {
    SimulateArgs a;
    if (std::optional<int> rc = parse_simulate_args(args, a)) return *rc;
    sim::SimConfig cfg;
    std::vector<uint32_t> sizes;
    if (int rc = load_config(a, cfg, sizes); rc != exit_ok) return rc;
    return write_report(run_scenarios(cfg, sizes, a.quiet), a);
}

} // namespace clairfs::cli
