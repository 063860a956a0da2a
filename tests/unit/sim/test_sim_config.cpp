// SPDX-License-Identifier: MIT
// The simulator's config: typed keys, a typo refused by name, the job's
// keys through the registration's parser.
#include "clairfs/sim/sim_config.hpp"

#include <algorithm>
#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>
#include <unistd.h>

using namespace clairfs;

namespace {

const char* base = R"({
  "cluster": {"nodes": 4, "ranks_per_node": 2},
  "node": {"ram": "64M"},
  "dataset": {"files": 1000, "mean_bytes": 1000, "median_bytes": 800},
  "job": {"batch_size": 16, "num_workers": 2, "epochs": 2, "seed": 7}
})";

std::string parse(const std::string& text, sim::SimConfig& c) {
    return sim::parse_sim_config(text, "t.json", c);
}

} // namespace

TEST_CASE("a valid config sets the world from the cluster and reads job keys") {
    sim::SimConfig c;
    REQUIRE(parse(base, c) == "");
    CHECK(c.world() == 8);
    CHECK(c.job.world_size == 8);
    CHECK(c.job.sampler == order::SamplerKind::distributed);
    CHECK(c.job.batch_size == 16);
    CHECK(c.job.num_workers == 2);
    CHECK(c.job.seed == 7);
    CHECK(c.node.ram == 64ull << 20);
    CHECK(c.scenarios.size() == 3);
}

TEST_CASE("bad configs are refused with the key's path") {
    sim::SimConfig c;
    auto with = [&](const std::string& from, const std::string& to) {
        std::string t = base;
        auto at = t.find(from);
        REQUIRE(at != std::string::npos);
        t.replace(at, from.size(), to);
        return parse(t, c);
    };
    CHECK(with("\"nodes\": 4", "\"nodez\": 4").find("cluster: unknown key 'nodez'") !=
          std::string::npos);
    CHECK(with("\"nodes\": 4", "\"nodes\": 0").find("cluster.nodes: must be between 1") !=
          std::string::npos);
    CHECK(with("\"nodes\": 4", "\"nodes\": -3").find("cluster.nodes") != std::string::npos);
    CHECK(with("\"64M\"", "\"64Q\"").find("node.ram: must be a size") != std::string::npos);
    CHECK(with("\"seed\": 7", "\"world_size\": 3").find("job.world_size: 3 is not") !=
          std::string::npos);
    CHECK(with("\"seed\": 7", "\"sampler\": \"random\"").find("job.sampler") !=
          std::string::npos);
    CHECK(with("\"seed\": 7", "\"batch_sise\": 3").find("job:") != std::string::npos);
    CHECK(with("\"median_bytes\": 800", "\"median_bytes\": 2000").find("median_bytes") !=
          std::string::npos);
    CHECK(with("\"ram\": \"64M\"", "\"ssd\": \"1G\"").find("node.ram: clairfs needs") !=
          std::string::npos);
    CHECK(parse(std::string(base) + ",", c).find("not valid JSON") != std::string::npos);
    CHECK(with("\"cluster\"", "\"scenarios\": [\"warp\"], \"cluster\"")
              .find("unknown scenario 'warp'") != std::string::npos);
}

TEST_CASE("dataset sizes: drawn with the configured median, or read from a manifest") {
    sim::SimConfig c;
    REQUIRE(parse(base, c) == "");
    c.dataset.files = 20001;
    c.dataset.mean_bytes = 110e3;
    c.dataset.median_bytes = 94e3;
    std::vector<uint32_t> a, b;
    REQUIRE(sim::dataset_sizes(c, a) == "");
    REQUIRE(sim::dataset_sizes(c, b) == "");
    CHECK(a == b); // seeded
    std::vector<uint32_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted[sorted.size() / 2] == doctest::Approx(94e3).epsilon(0.03));
    double mean = 0;
    for (uint32_t s : a) mean += s;
    CHECK(mean / a.size() == doctest::Approx(110e3).epsilon(0.03));

    char path[] = "/tmp/clairfs-manifest-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    {
        std::ofstream m(path);
        m << "# size path\n100 a/x.jpg\n\n250\t b/y.jpg\n";
    }
    c.dataset.files = 0;
    c.dataset.manifest = path;
    REQUIRE(sim::dataset_sizes(c, a) == "");
    CHECK(a == std::vector<uint32_t>{100, 250});
    {
        std::ofstream m(path);
        m << "100 a\nabc b\n";
    }
    CHECK(sim::dataset_sizes(c, a).find(":2: the first field") != std::string::npos);
    unlink(path);
}
