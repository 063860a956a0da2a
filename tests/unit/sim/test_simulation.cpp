// SPDX-License-Identifier: MIT
// The simulator's accounting and the properties its decisions must have:
// every open counted once, direct reads read what was opened, a group
// whose RAM holds the dataset reads each file from the shared file system
// once, and peers never read more than clairfs alone.
#include "clairfs/sim/simulation.hpp"

#include <doctest/doctest.h>
#include <numeric>

using namespace clairfs;

namespace {

sim::SimConfig small(uint32_t nodes, uint32_t ranks, uint64_t ram) {
    sim::SimConfig c;
    REQUIRE(sim::parse_sim_config(R"({
      "cluster": {"nodes": 3, "ranks_per_node": 1, "cores": 4},
      "node": {"ram": "1G", "fetch_threads": 8},
      "shared_fs": {"mb_s": 20, "iops": 250, "client_mb_s": 20, "request_bytes": "128K"},
      "network": {"mb_s": 1000},
      "compute": {"step_s": 0.05, "sample_cpu_s": 0.001},
      "dataset": {"files": 1200, "mean_bytes": 100000, "median_bytes": 90000},
      "job": {"batch_size": 16, "num_workers": 2, "epochs": 3, "seed": 1,
              "generator": "explicit"},
      "scenarios": ["local-warm", "direct", "clairfs", "clairfs-peers"]
    })",
                                  "t", c) == "");
    c.cluster.nodes = nodes;
    c.cluster.ranks_per_node = ranks;
    c.job.world_size = nodes * ranks;
    c.node.ram = ram;
    return c;
}

uint64_t total(const std::vector<uint32_t>& s) {
    return std::accumulate(s.begin(), s.end(), uint64_t{0});
}

void check_accounting(const sim::SimConfig& c, const sim::ScenarioResult& r, uint64_t opens) {
    REQUIRE(r.epochs.size() == c.job.epochs);
    for (const auto& e : r.epochs) {
        CHECK(e.opens == opens);
        CHECK(e.ram_hits + e.page_cache_hits + e.waited + e.from_ssd + e.from_peer +
                  e.from_fs ==
              e.opens);
        CHECK(e.seconds > 0);
        // No epoch is shorter than its training steps.
        const uint64_t batches = (opens / c.world() + c.job.batch_size - 1) / c.job.batch_size;
        CHECK(e.seconds >= batches * c.compute.step_s);
    }
}

} // namespace

TEST_CASE("every scenario counts each open once; direct reads the dataset every epoch") {
    sim::SimConfig c = small(3, 2, 40 << 20);
    std::vector<uint32_t> sizes;
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    for (sim::Scenario s : c.scenarios) {
        auto r = sim::simulate(c, sizes, s);
        check_accounting(c, r, sizes.size()); // 1200 files over 6 ranks: no padding
        if (s == sim::Scenario::direct)
            for (const auto& e : r.epochs) {
                CHECK(e.fs_bytes == total(sizes));
                CHECK(e.fs_files == sizes.size());
                // At 20 MB/s no epoch beats the bandwidth floor.
                CHECK(e.seconds >= total(sizes) / 20e6);
            }
        if (s == sim::Scenario::local_warm)
            for (const auto& e : r.epochs) CHECK(e.fs_bytes == 0);
    }
}

TEST_CASE("the same config gives the same prediction") {
    sim::SimConfig c = small(3, 1, 30 << 20);
    std::vector<uint32_t> sizes;
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    auto a = sim::simulate(c, sizes, sim::Scenario::clairfs_peers);
    auto b = sim::simulate(c, sizes, sim::Scenario::clairfs_peers);
    for (size_t e = 0; e < a.epochs.size(); ++e) {
        CHECK(a.epochs[e].seconds == b.epochs[e].seconds);
        CHECK(a.epochs[e].fs_bytes == b.epochs[e].fs_bytes);
        CHECK(a.epochs[e].peer_bytes == b.epochs[e].peer_bytes);
    }
}

TEST_CASE("RAM for the whole dataset on every node: read once, then all hits") {
    sim::SimConfig c = small(1, 1, 1 << 30);
    c.job.world_size = 1;
    std::vector<uint32_t> sizes;
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    auto r = sim::simulate(c, sizes, sim::Scenario::clairfs);
    check_accounting(c, r, sizes.size());
    CHECK(r.epochs[0].fs_bytes == total(sizes));
    for (size_t e = 1; e < r.epochs.size(); ++e) {
        CHECK(r.epochs[e].fs_bytes == 0);
        CHECK(r.epochs[e].ram_hits == sizes.size());
    }
}

TEST_CASE("peers whose RAM together holds the dataset read each file once") {
    // Each node holds 40% of the dataset: alone it re-reads, as a group not.
    std::vector<uint32_t> sizes;
    sim::SimConfig c = small(3, 2, 0);
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    c.node.ram = total(sizes) * 4 / 10;
    auto alone = sim::simulate(c, sizes, sim::Scenario::clairfs);
    auto peers = sim::simulate(c, sizes, sim::Scenario::clairfs_peers);
    check_accounting(c, peers, sizes.size());
    CHECK(peers.pinned_nodes == 3);
    uint64_t files = 0, bytes = 0, peer_bytes = 0, alone_bytes = 0;
    for (const auto& e : peers.epochs) {
        files += e.fs_files;
        bytes += e.fs_bytes;
        peer_bytes += e.peer_bytes;
    }
    for (const auto& e : alone.epochs) alone_bytes += e.fs_bytes;
    // Once, but for the odd file a node found quicker to read itself than
    // to wait for its home (choose_source) at the end of epoch 0.
    CHECK(files >= sizes.size());
    CHECK(files <= sizes.size() * 101 / 100);
    CHECK(bytes <= total(sizes) * 101 / 100);
    CHECK(peer_bytes > 0);
    CHECK(alone_bytes > total(sizes) * 3 / 2);
    // Later epochs from peers at network speed: faster than re-reading.
    CHECK(peers.epochs[2].seconds < alone.epochs[2].seconds);
}

TEST_CASE("a group short of the dataset: peers read no more than clairfs alone") {
    std::vector<uint32_t> sizes;
    sim::SimConfig c = small(3, 1, 0);
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    c.node.ram = total(sizes) / 4;
    auto alone = sim::simulate(c, sizes, sim::Scenario::clairfs);
    auto peers = sim::simulate(c, sizes, sim::Scenario::clairfs_peers);
    check_accounting(c, peers, sizes.size());
    CHECK(peers.pinned_nodes == 0);
    uint64_t a = 0, p = 0;
    for (size_t e = 0; e < 3; ++e) {
        a += alone.epochs[e].fs_bytes;
        p += peers.epochs[e].fs_bytes;
    }
    CHECK(p < a);
    CHECK(p > total(sizes)); // 75% of the dataset in the group's RAM: some re-reads
}

TEST_CASE("an SSD tier that holds the dataset: later epochs read no shared FS") {
    std::vector<uint32_t> sizes;
    sim::SimConfig c = small(1, 1, 0);
    c.job.world_size = 1;
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    c.node.ram = total(sizes) / 3;
    c.node.ssd = total(sizes) * 2;
    auto r = sim::simulate(c, sizes, sim::Scenario::clairfs);
    check_accounting(c, r, sizes.size());
    CHECK(r.epochs[0].fs_bytes == total(sizes));
    CHECK(r.epochs[1].fs_bytes == 0);
    CHECK(r.epochs[2].fs_bytes == 0);
    CHECK(r.epochs[1].ram_hits + r.epochs[1].waited + r.epochs[1].from_ssd == sizes.size());
}

TEST_CASE("a file above a sixteenth of --mem is read through at every open, never held") {
    sim::SimConfig c = small(1, 1, 0);
    c.job.world_size = 1;
    std::vector<uint32_t> sizes;
    REQUIRE(sim::dataset_sizes(c, sizes) == "");
    c.node.ram = total(sizes) * 2;
    sizes[7] = static_cast<uint32_t>(c.node.ram / 16 + 1); // one file too large to tier
    auto r = sim::simulate(c, sizes, sim::Scenario::clairfs);
    check_accounting(c, r, sizes.size());
    for (size_t e = 1; e < r.epochs.size(); ++e) {
        CHECK(r.epochs[e].fs_bytes == sizes[7]);
        CHECK(r.epochs[e].from_fs == 1);
        CHECK(r.epochs[e].ram_hits == sizes.size() - 1);
    }
}

TEST_CASE("a job whose ranks open nothing is refused, not simulated") {
    sim::SimConfig c = small(3, 2, 1 << 20);
    c.job.batch_size = 512;
    c.job.drop_last = true; // 200 samples per rank, no full batch
    CHECK(sim::check_job(c, 1200).find("each rank opens no sample") != std::string::npos);
    c.job.drop_last = false;
    CHECK(sim::check_job(c, 1200) == "");
    std::vector<uint32_t> sizes(1200, 1000);
    c.job.drop_last = true;
    auto r = sim::simulate(c, sizes, sim::Scenario::clairfs); // must not divide by zero
    CHECK(r.events == 0);
}
