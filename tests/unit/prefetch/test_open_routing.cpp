// SPDX-License-Identifier: MIT
// Two jobs over one directory of files (a sweep): an open by a process no
// job has claimed does not begin a job's next epoch (JobTable::route_open),
// as a READ does not for jobs over byte ranges (test_range_routing.cpp).
// Also: an open that fits two jobs whose orders differ is neither's, and
// one that fits two of one order (a sweep of one seed) is the first's.
#include "small_engine.hpp"
#include "clairfs/control/controller.hpp"
#include "clairfs/order/epoch_orders.hpp"
#include "live_process.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <nlohmann/json.hpp>

using namespace clairfs;

namespace {

nlohmann::json loader_of(const nlohmann::json& st, const std::string& job) {
    for (const auto& j : st["jobs"])
        if (j["id"] == job) return j["loaders"][0];
    FAIL("no job " << job << " in " << st.dump());
    return {};
}

// The seed of b's random sampler (batch 1, 2 epochs) whose two epochs
// satisfy `fits`, given each epoch's order.
uint64_t seed_where(uint32_t n,
                    const std::function<bool(const std::vector<order::Sample>&,
                                             const std::vector<order::Sample>&)>& fits) {
    order::JobSpec spec;
    spec.sampler = order::SamplerKind::random;
    spec.batch_size = 1;
    spec.epochs = 2;
    for (uint64_t s = 1; s < 1000; ++s) {
        spec.seed = s;
        order::EpochOrders orders(spec, n);
        std::vector<order::Sample> e0, e1;
        orders.next(e0);
        orders.next(e1);
        if (fits(e0, e1)) return s;
    }
    return 0;
}

ptrdiff_t position(const std::vector<order::Sample>& e, order::Sample sample) {
    return std::find(e.begin(), e.end(), sample) - e.begin();
}

// Job a reads class0 in order; job b in the order `b_sampler` gives (with
// `seed`, for random).
struct RoutedJobs {
    test::Dataset d{192}; // 64 in class0
    // Readers are live processes, forked before the engine's threads start.
    std::array<test::LiveProcess, 2> readers;
    std::vector<index::NodeId> order = test::sorted_ids(d, "class0/");
    std::unique_ptr<prefetch::Engine> engine;
    std::unique_ptr<control::Controller> control;

    RoutedJobs(const std::string& b_sampler, uint64_t seed) {
        REQUIRE(order.size() == 64);
        engine = test::small_engine(d);
        control = std::make_unique<control::Controller>(d.idx, *engine);
        auto reg = [](const std::string& job, const std::string& sampler, uint64_t seed) {
            return R"({"job": ")" + job + R"(", "root": "class0", "layout": "sorted", "sampler": ")" +
                   sampler + R"(", "seed": )" + std::to_string(seed) +
                   R"(, "batch_size": 1, "epochs": 2})";
        };
        std::string why;
        REQUIRE_MESSAGE(control->write_control(reg("a", "sequential", 0), why) == 0, why);
        REQUIRE_MESSAGE(control->write_control(reg("b", b_sampler, seed), why) == 0, why);
    }
    ~RoutedJobs() { engine->stop(); }

    nlohmann::json loader(const std::string& job) const {
        return loader_of(nlohmann::json::parse(control->status_text()), job);
    }
    void open(uint32_t a_position, size_t reader) {
        (void)engine->opened(order[a_position], readers.at(reader).id());
    }
};

} // namespace

TEST_CASE("an open of an unclaimed process does not begin another job's next epoch") {
    // a's first file (position 0 of a's next epoch) far from b's first
    // positions in both epochs, where b's cursor stays (nobody reads b).
    uint64_t seed = seed_where(64, [](const auto& e0, const auto& e1) {
        return position(e0, 0) >= 32 && position(e1, 0) >= 32;
    });
    REQUIRE(seed != 0);
    RoutedJobs t("random", seed);
    for (uint32_t p = 0; p + 1 < 64; ++p) t.open(p, 0);
    INFO(t.loader("a").dump());
    REQUIRE(t.loader("a")["epoch"] == 0);
    REQUIRE(t.loader("a")["matched"] == 63);

    // Position 0 of a's next epoch, opened by a process of nobody.
    t.open(0, 1);
    CHECK(t.loader("a")["epoch"] == 0);
    CHECK(t.loader("b")["epoch"] == 0);
}

TEST_CASE("an open that fits two jobs' different orders is neither's") {
    // b's first file is a's second: both expect it first thing.
    uint64_t seed = seed_where(64, [](const auto& e0, const auto&) { return e0[0] == 1; });
    REQUIRE(seed != 0);
    RoutedJobs t("random", seed);
    t.open(1, 0);
    CHECK(t.loader("a")["opens"] == 0);
    CHECK(t.loader("b")["opens"] == 0);
}

TEST_CASE("an open that fits two jobs of one order is the first's") {
    RoutedJobs t("sequential", 0);
    t.open(1, 0);
    CHECK(t.loader("a")["matched"] == 1);
    CHECK(t.loader("b")["opens"] == 0);
}
