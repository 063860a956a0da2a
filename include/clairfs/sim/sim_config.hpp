// SPDX-License-Identifier: MIT
// What `clairfs simulate --config FILE` reads: a cluster, its shared file
// system and network, a dataset and a job. Only times are modelled; the
// job's keys are a registration's, read by the same parser.
#pragma once

#include "clairfs/order/job_spec.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::sim {

enum class Scenario : uint8_t {
    local_warm,    // every node reads a warm local copy (the floor)
    direct,        // the job reads the shared file system itself
    clairfs,       // clairfs on every node, no peers
    clairfs_peers, // clairfs on every node, with --peers
};
const char* scenario_name(Scenario s);
// Appends the scenario called `name` to `out`: "" or why not (an unknown
// name, listing the known ones).
std::string add_scenario(std::string_view name, std::vector<Scenario>& out);

struct SimConfig {
    // The fields are grouped as the config file's sections are: the members
    // cluster, node, ... dataset are the sections of the same names.

    // The cluster.
    struct Cluster {
        uint32_t nodes = 1;
        uint32_t ranks_per_node = 1;
        uint32_t cores = 8;        // per node: run the loader workers' CPU work
        bool cores_shared = false; // one pool of `cores` for every node (nodes on one host)
    };
    // Per node: clairfs's tiers and what its reads cost.
    struct Node {
        uint64_t ram = 0;                   // --mem
        uint64_t ssd = 0;                   // --ssd; 0: no SSD tier
        double ram_bandwidth = 10e9;        // bytes/s, a read from RAM or the page cache
        double ssd_read_bandwidth = 2e9;    // bytes/s
        double ssd_write_bandwidth = 1e9;   // bytes/s
        double ssd_latency_s = 100e-6;      // per read
        double file_cost_s = 0.3e-3;        // a file opened and read through the FUSE mount
        double local_file_cost_s = 0.05e-3; // a file opened and read from a local copy
        unsigned fetch_threads = 16;        // --fetch-threads
    };
    // The shared file system: aggregate limits and one client's.
    struct SharedFs {
        double bandwidth = 10e9;       // bytes/s, all clients together
        double iops = 100000;          // read requests/s, all clients together
        double client_bandwidth = 2e9; // bytes/s, one node
        double latency_s = 1e-3;       // per file read
        // clairfs reads a file of S bytes in ceil(S / this) requests.
        uint64_t request_bytes = 1 << 20;
        // What the job's own read of one file costs in requests (direct): a
        // decoder that reads a file in pieces, with seeks, defeats readahead
        // (PIL: 2.5 per JPEG here, against 1.0 for a whole-file read). 0: as
        // clairfs's whole-file read.
        double direct_requests_per_file = 0;
        // The page cache that direct reads go through: bytes per node (or for
        // all nodes together when shared, as on one host).
        uint64_t page_cache = 0;
        bool page_cache_shared = false;
    };
    // The network between nodes.
    struct Network {
        double bandwidth = 10e9; // bytes/s, each direction of each node
        double latency_s = 20e-6;
        double peer_file_cost_s = 0.1e-3; // daemon time per file moved between two nodes
        unsigned server_threads = 4;      // --peers: threads answering other daemons
    };
    // The job's compute.
    struct Compute {
        double step_s = 0.1;           // the training step per batch (GPU)
        double sample_cpu_s = 0.0;     // a loader worker's CPU per sample (decoding, augmenting)
        double epoch_overhead_s = 0.0; // a new iterator: workers started, before the first open
        // The job's first iterator starts this long after the registration;
        // clairfs prefetches meanwhile (a job importing torch, scanning its
        // dataset). Epoch 0 is timed from the job's start.
        double job_start_s = 0.0;
        bool lockstep = true; // ranks wait for each other every step (DDP's all-reduce)
    };
    // The dataset: per-file sizes, in sample order.
    struct Dataset {
        uint64_t files = 0;
        double mean_bytes = 110e3;
        double median_bytes = 94e3;
        uint64_t size_seed = 0;
        std::string manifest; // a file of sizes, one per line (first field), in sample order
        // A real dataset directory, numbered as the job's framework would
        // (`clairfs order --root DIR --layout L`): its files' sizes.
        std::string root;
        std::string layout; // "": as `clairfs order` picks it
    };

    std::string name;
    std::string path; // where it was read from, for the report

    Cluster cluster;
    Node node;
    SharedFs shared_fs;
    Network network;
    Compute compute;
    Dataset dataset;

    order::JobSpec job;
    std::vector<Scenario> scenarios{Scenario::direct, Scenario::clairfs, Scenario::clairfs_peers};

    uint32_t world() const { return cluster.nodes * cluster.ranks_per_node; }
};

// Reads and checks a config: "" or a one-line reason naming the key.
std::string load_sim_config(const std::string& path, SimConfig& out);
// The same from text (tests); `origin` prefixes the reason.
std::string parse_sim_config(const std::string& text, const std::string& origin, SimConfig& out);

// Every file's size, in sample order: the manifest's, or drawn from a
// log-normal distribution with the configured mean and median. "" or why
// not. (A dataset.root is scanned by `clairfs simulate` itself, through
// the order command's dataset loader.)
std::string dataset_sizes(const SimConfig& cfg, std::vector<uint32_t>& sizes);

} // namespace clairfs::sim
