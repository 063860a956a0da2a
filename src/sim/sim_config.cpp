// SPDX-License-Identifier: MIT
// The simulator's config: every key typed and checked, an unknown key
// refused by name (a typo must not silently leave a default in place).
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/sim/sim_config.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/strict_json.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

namespace clairfs::sim {

const char* scenario_name(Scenario s) {
    switch (s) {
    case Scenario::local_warm: return "local-warm";
    case Scenario::direct: return "direct";
    case Scenario::clairfs: return "clairfs";
    case Scenario::clairfs_peers: return "clairfs-peers";
    }
    return "?";
}

std::string add_scenario(std::string_view name, std::vector<Scenario>& out) {
    for (Scenario k : {Scenario::local_warm, Scenario::direct, Scenario::clairfs,
                       Scenario::clairfs_peers})
        if (name == scenario_name(k)) {
            out.push_back(k);
            return "";
        }
    return "unknown scenario '" + std::string(name) +
           "' (known: local-warm, direct, clairfs, clairfs-peers)";
}

namespace {

using Json = nlohmann::json;
using Setter = std::function<std::string(const Json&)>;

// A count: a non-negative JSON integer within `max`.
Setter count(uint64_t& out, uint64_t min, uint64_t max) {
    return [&out, min, max](const Json& v) -> std::string {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
            return "must be a non-negative integer";
        uint64_t x = v.get<uint64_t>();
        if (x < min || x > max)
            return "must be between " + std::to_string(min) + " and " + std::to_string(max);
        out = x;
        return "";
    };
}
// The same into a narrower field (a count of nodes, ranks, threads).
template <class T>
Setter count(T& out, T min, T max) {
    return [&out, min, max](const Json& v) {
        uint64_t x = 0;
        std::string why = count(x, min, max)(v);
        if (why.empty()) out = static_cast<T>(x);
        return why;
    };
}
// A finite number >= min; `scale` turns the unit of the key (MB/s) into
// the model's (bytes/s).
Setter number(double& out, double min, double scale = 1.0) {
    return [&out, min, scale](const Json& v) -> std::string {
        if (!v.is_number()) return "must be a number";
        double x = v.get<double>();
        if (!std::isfinite(x) || x < min) return "must be a number >= " + std::to_string(min);
        out = x * scale;
        return "";
    };
}
Setter positive(double& out, double scale = 1.0) {
    return [&out, scale](const Json& v) -> std::string {
        if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
            return "must be a number > 0";
        out = v.get<double>() * scale;
        return "";
    };
}
// Bytes: an integer, or text such as "64G" (binary units, as --mem).
Setter size(uint64_t& out) {
    return [&out](const Json& v) -> std::string {
        if (v.is_number_unsigned()) {
            out = v.get<uint64_t>();
            return "";
        }
        if (v.is_string() && config::parse_size(v.get<std::string>(), out)) return "";
        return "must be a size in bytes, such as 4096 or \"64G\"";
    };
}
Setter boolean(bool& out) {
    return [&out](const Json& v) -> std::string {
        if (!v.is_boolean()) return "must be true or false";
        out = v.get<bool>();
        return "";
    };
}
Setter text(std::string& out) {
    return [&out](const Json& v) -> std::string {
        if (!v.is_string()) return "must be a string";
        out = v.get<std::string>();
        return "";
    };
}

// Applies each key of `obj` (the section `where`, "" at the top): "" or
// the reason, prefixed with the key's path ("cluster.nodes: ...").
std::string apply(const Json& obj, const std::string& where,
                  const std::map<std::string, Setter>& keys) {
    const std::string at = where.empty() ? "" : where + ".";
    if (!obj.is_object()) return (where.empty() ? "the config" : where) + ": must be an object";
    for (const auto& [k, v] : obj.items()) {
        auto it = keys.find(k);
        if (it == keys.end()) {
            std::string known;
            for (const auto& [name, _] : keys) known += (known.empty() ? "" : ", ") + name;
            return (where.empty() ? "" : where + ": ") + "unknown key '" + k + "' (known: " +
                   known + ")";
        }
        std::string why = it->second(v);
        if (why.empty()) continue;
        // A section's own reasons already name their path.
        if (why.starts_with(k + ".") || why.starts_with(k + ":")) return why;
        return at + k + ": " + why;
    }
    return "";
}

constexpr double mb = 1e6; // bandwidths are given in MB/s (10^6 bytes)

std::string apply_cluster(const Json& v, SimConfig& c) {
    return apply(v, "cluster",
                 {{"nodes", count(c.cluster.nodes, 1u, 65536u)},
                  {"ranks_per_node", count(c.cluster.ranks_per_node, 1u, 64u)},
                  {"cores", count(c.cluster.cores, 1u, 4096u)},
                  {"cores_shared", boolean(c.cluster.cores_shared)}});
}

std::string apply_node(const Json& v, SimConfig& c) {
    return apply(v, "node",
                 {{"ram", size(c.node.ram)},
                  {"ssd", size(c.node.ssd)},
                  {"ram_mb_s", positive(c.node.ram_bandwidth, mb)},
                  {"ssd_read_mb_s", positive(c.node.ssd_read_bandwidth, mb)},
                  {"ssd_write_mb_s", positive(c.node.ssd_write_bandwidth, mb)},
                  {"ssd_latency_s", number(c.node.ssd_latency_s, 0)},
                  {"file_cost_s", number(c.node.file_cost_s, 0)},
                  {"local_file_cost_s", number(c.node.local_file_cost_s, 0)},
                  {"fetch_threads", count(c.node.fetch_threads, 1u, 4096u)}});
}

std::string apply_shared_fs(const Json& v, SimConfig& c) {
    return apply(v, "shared_fs",
                 {{"mb_s", positive(c.shared_fs.bandwidth, mb)},
                  {"iops", positive(c.shared_fs.iops)},
                  {"client_mb_s", positive(c.shared_fs.client_bandwidth, mb)},
                  {"latency_s", number(c.shared_fs.latency_s, 0)},
                  {"request_bytes", size(c.shared_fs.request_bytes)},
                  {"direct_requests_per_file", number(c.shared_fs.direct_requests_per_file, 0)},
                  {"page_cache", size(c.shared_fs.page_cache)},
                  {"page_cache_shared", boolean(c.shared_fs.page_cache_shared)}});
}

std::string apply_network(const Json& v, SimConfig& c) {
    return apply(v, "network",
                 {{"mb_s", positive(c.network.bandwidth, mb)},
                  {"latency_s", number(c.network.latency_s, 0)},
                  {"file_cost_s", number(c.network.peer_file_cost_s, 0)},
                  {"server_threads", count(c.network.server_threads, 1u, 4096u)}});
}

std::string apply_compute(const Json& v, SimConfig& c) {
    return apply(v, "compute",
                 {{"step_s", number(c.compute.step_s, 0)},
                  {"sample_cpu_s", number(c.compute.sample_cpu_s, 0)},
                  {"epoch_overhead_s", number(c.compute.epoch_overhead_s, 0)},
                  {"job_start_s", number(c.compute.job_start_s, 0)},
                  {"lockstep", boolean(c.compute.lockstep)}});
}

std::string apply_dataset(const Json& v, SimConfig& c) {
    return apply(v, "dataset",
                 {{"files", count(c.dataset.files, 1, UINT32_MAX - 1)},
                  {"mean_bytes", positive(c.dataset.mean_bytes)},
                  {"median_bytes", positive(c.dataset.median_bytes)},
                  {"seed", count(c.dataset.size_seed, 0, UINT64_MAX)},
                  {"manifest", text(c.dataset.manifest)},
                  {"root", text(c.dataset.root)},
                  {"layout", text(c.dataset.layout)}});
}

// The top-level keys. "job" and "scenarios" are only kept here: they are
// read once every section has its values (the job needs the cluster's
// world size).
std::map<std::string, Setter> top_keys(SimConfig& c, Json& job,
                                       std::vector<std::string>& scenarios) {
    auto section = [&c](std::string (*apply_section)(const Json&, SimConfig&)) -> Setter {
        return [&c, apply_section](const Json& v) { return apply_section(v, c); };
    };
    return {
        {"name", text(c.name)},
        {"cluster", section(apply_cluster)},
        {"node", section(apply_node)},
        {"shared_fs", section(apply_shared_fs)},
        {"network", section(apply_network)},
        {"compute", section(apply_compute)},
        {"dataset", section(apply_dataset)},
        {"job", [&job](const Json& v) -> std::string {
             if (!v.is_object()) return "job: must be an object";
             job = v;
             return "";
         }},
        {"scenarios", [&scenarios](const Json& v) -> std::string {
             if (!v.is_array() || v.empty()) return "must be a non-empty list of names";
             for (const Json& s : v) {
                 if (!s.is_string()) return "must be a list of names";
                 scenarios.push_back(s.get<std::string>());
             }
             return "";
         }},
    };
}

std::string set_scenarios(const std::vector<std::string>& scenarios, SimConfig& c) {
    if (scenarios.empty()) return "";
    c.scenarios.clear();
    for (const std::string& s : scenarios)
        if (std::string why = add_scenario(s, c.scenarios); !why.empty())
            return "scenarios: " + why;
    return "";
}

// The job: a registration's keys, through the registration's parser; its
// world is the cluster's.
std::string set_job(const Json& job, SimConfig& c) {
    c.job = order::JobSpec{};
    c.job.sampler = order::SamplerKind::distributed;
    bool world_given = false;
    for (const auto& [k, v] : job.items()) {
        if (k == "rank" || k == "framework")
            return "job." + k + ": not a key here (every rank is simulated; pytorch only)";
        std::string value;
        if (std::string why = config::json_value_text(v, config::JsonType::text, value);
            !why.empty())
            return "job." + k + ": " + why;
        if (std::string why = order::set_job_key(c.job, k, value); !why.empty())
            return "job: " + why;
        if (k == "world_size") world_given = true;
    }
    if (world_given && c.job.world_size != c.world())
        return "job.world_size: " + std::to_string(c.job.world_size) +
               " is not cluster.nodes x cluster.ranks_per_node (" + std::to_string(c.world()) +
               "); leave it out";
    c.job.world_size = c.world();
    c.job.rank = 0;
    if (c.job.sampler != order::SamplerKind::distributed && c.world() > 1)
        return "job.sampler: several ranks need sampler distributed (each rank of a "
               "random or sequential sampler would read the whole dataset)";
    return "";
}

// What no single key can tell: the dataset's one source, and the keys
// that only make sense together.
std::string check_combination(const SimConfig& c) {
    const SimConfig::Dataset& d = c.dataset;
    const int sources = (d.files != 0) + !d.manifest.empty() + !d.root.empty();
    if (sources == 0)
        return "dataset: give files (with mean_bytes and median_bytes), a manifest or a root";
    if (sources > 1) return "dataset: give one of files, manifest and root";
    if (!d.layout.empty() && d.root.empty()) return "dataset.layout: only with root";
    if (d.files != 0 && d.median_bytes > d.mean_bytes)
        return "dataset.median_bytes: must not exceed mean_bytes (a log-normal's median "
               "is below its mean)";
    if (c.shared_fs.request_bytes == 0) return "shared_fs.request_bytes: must be > 0";
    if (c.node.ram == 0 && (std::ranges::count(c.scenarios, Scenario::clairfs) ||
                            std::ranges::count(c.scenarios, Scenario::clairfs_peers)))
        return "node.ram: clairfs needs a RAM tier (--mem); give its size";
    return "";
}

} // namespace

std::string parse_sim_config(const std::string& text_in, const std::string& origin,
                             SimConfig& c) {
    c = SimConfig{}; // every key not given takes its default, whatever `c` held
    auto fail = [&](const std::string& why) { return origin + ": " + why; };
    Json root;
    if (std::string why = config::parse_strict_json(text_in, root); !why.empty())
        return fail(why);
    if (!root.is_object()) return fail("must be a JSON object");
    Json job = Json::object();
    std::vector<std::string> scenarios;
    if (std::string why = apply(root, "", top_keys(c, job, scenarios)); !why.empty())
        return fail(why);
    if (std::string why = set_scenarios(scenarios, c); !why.empty()) return fail(why);
    if (std::string why = set_job(job, c); !why.empty()) return fail(why);
    if (std::string why = check_combination(c); !why.empty()) return fail(why);
    return "";
}

std::string load_sim_config(const std::string& path, SimConfig& out) {
    std::string t;
    if (!config::read_text_file(path, t, config::max_json_bytes + 1))
        return "cannot read config file '" + path + "'";
    if (t.size() > config::max_json_bytes) return path + ": larger than 1 MiB";
    out.path = path;
    return parse_sim_config(t, path, out);
}

} // namespace clairfs::sim
