// SPDX-License-Identifier: MIT
// RankPlanner::resync: from the first opens of an epoch that did not fit,
// the planner finds the seed the job really used and plans from it on. The
// expected orders come from EpochOrders with the draws made explicit.
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/worker_split.hpp"
#include "disk_tree.hpp"
#include "plan_checks.hpp"

using namespace clairfs;
using namespace clairfs::test;

namespace {

std::vector<index::NodeId> nodes_of(const std::vector<order::Sample>& samples,
                                    const index::Index& idx, const layout::Dataset& ds) {
    std::vector<index::NodeId> out;
    for (order::Sample s : samples) out.push_back(layout::opened_node(idx, ds.samples[s]));
    return out;
}

// The first opens each of the loader's workers makes: their first batch.
plan::ResyncRequest first_opens(const std::vector<index::NodeId>& epoch, uint64_t e,
                                uint32_t batch, uint32_t workers) {
    plan::ResyncRequest req;
    req.epoch = e;
    for (uint32_t w = 0; w < workers; ++w)
        for (uint32_t i = 0; i < batch; ++i) req.opened.push_back(epoch[w * batch + i]);
    req.window = 2 * workers * batch + batch;
    return req;
}

} // namespace

TEST_CASE("a validation pass's base_seed between epochs is found and followed") {
    auto idx = flat_index(8, 60); // 480 samples
    auto ds = sorted_dataset(idx);
    order::JobSpec s;
    s.seed = 5;
    s.epochs = 4;
    s.batch_size = 8;
    s.num_workers = 2;
    REQUIRE(plan::resyncable(s, 480));
    plan::RankPlanner planner(s, ds, idx);
    // The job: epoch e's iterator comes after e validation passes, each two
    // more global draws than the plain chain predicts.
    order::EpochOrders real(s, 480);
    std::vector<order::Sample> samples;
    real.next(samples);
    auto e0 = planner.next();
    CHECK(e0->nodes == nodes_of(samples, idx, ds));
    auto e1 = planner.next(); // predicted without the validation pass: wrong
    for (uint64_t e = 1; e < 4; ++e) {
        real.skip_words(2);
        real.next(samples);
        auto want = nodes_of(samples, idx, ds);
        plan::ResyncResult r = planner.resync(first_opens(want, e, 8, 2), 4096);
        REQUIRE(r.found);
        CHECK(r.words == 2);
        auto got = planner.next();
        REQUIRE(got);
        CHECK(got->epoch == e);
        CHECK(got->skipped_words == 2);
        CHECK(got->nodes == want);
        if (e < 3) (void)planner.next(); // the next epoch, as the tracker asks for it
    }
}

TEST_CASE("a seed that explains nothing is not found, and the planner is unchanged") {
    auto idx = flat_index(8, 60);
    auto ds = sorted_dataset(idx);
    order::JobSpec s;
    s.seed = 5;
    s.epochs = 3;
    s.batch_size = 8;
    s.num_workers = 2;
    plan::RankPlanner planner(s, ds, idx);
    (void)planner.next();
    auto e1 = planner.next();
    order::JobSpec other = s;
    other.seed = 6;
    order::EpochOrders stranger(other, 480);
    std::vector<order::Sample> samples;
    stranger.next(samples);
    plan::ResyncResult r = planner.resync(first_opens(nodes_of(samples, idx, ds), 1, 8, 2), 256);
    CHECK_FALSE(r.found);
    CHECK(r.tried.find("257 seeds") != std::string::npos);
    auto again = planner.next();
    REQUIRE(again);
    CHECK(again->epoch == 1);
    CHECK(again->nodes == e1->nodes);
}

TEST_CASE("model initialisation before epoch 0 (pre_draws unknown) is found at epoch 0") {
    auto idx = flat_index(8, 60);
    auto ds = sorted_dataset(idx);
    order::JobSpec s;
    s.seed = 5;
    s.epochs = 2;
    s.batch_size = 8;
    s.num_workers = 2;
    order::JobSpec job = s;
    job.pre_draws = 110; // nn.Linear(10, 10) on the CPU
    order::EpochOrders real(job, 480);
    std::vector<order::Sample> samples;
    real.next(samples);
    plan::RankPlanner planner(s, ds, idx);
    (void)planner.next();
    (void)planner.next();
    plan::ResyncResult r = planner.resync(first_opens(nodes_of(samples, idx, ds), 0, 8, 2), 4096);
    REQUIRE(r.found);
    CHECK(r.words == 110);
    CHECK(planner.next()->nodes == nodes_of(samples, idx, ds));
    real.next(samples);
    CHECK(planner.next()->nodes == nodes_of(samples, idx, ds)); // epoch 1 follows on
}

TEST_CASE("a DistributedSampler without set_epoch repeats, and is followed as a repeat") {
    auto idx = flat_index(8, 60);
    auto ds = sorted_dataset(idx);
    order::JobSpec s;
    s.seed = 5;
    s.epochs = 4;
    s.sampler = order::SamplerKind::distributed;
    s.world_size = 3;
    s.rank = 1;
    s.batch_size = 4;
    s.num_workers = 2;
    plan::RankPlanner planner(s, ds, idx);
    auto e0 = planner.next();
    CHECK(e0->seed_epoch == 0u);
    (void)planner.next();
    plan::ResyncResult r = planner.resync(first_opens(e0->nodes, 1, 4, 2), 4096);
    REQUIRE(r.found);
    CHECK(r.repeat);
    for (uint64_t e = 1; e < 4; ++e) {
        auto got = planner.next();
        REQUIRE(got);
        CHECK(got->epoch == e);
        CHECK(got->seed_epoch == 0u);
        CHECK(got->nodes == e0->nodes);
    }
}

TEST_CASE("a DistributedSampler job resumed at epoch 37 is followed from there") {
    auto idx = flat_index(8, 60);
    auto ds = sorted_dataset(idx);
    order::JobSpec s;
    s.seed = 5;
    s.epochs = 3;
    s.sampler = order::SamplerKind::distributed;
    s.world_size = 2;
    s.batch_size = 4;
    s.num_workers = 2;
    order::JobSpec resumed = s;
    resumed.start_epoch = 37;
    plan::RankPlanner real(resumed, ds, idx);
    auto r37 = real.next(), r38 = real.next();
    plan::RankPlanner planner(s, ds, idx);
    (void)planner.next();
    (void)planner.next();
    plan::ResyncResult r = planner.resync(first_opens(r37->nodes, 0, 4, 2), 4096);
    REQUIRE(r.found);
    CHECK_FALSE(r.repeat);
    auto got = planner.next();
    CHECK(got->epoch == 0);
    CHECK(got->seed_epoch == 37u);
    CHECK(got->nodes == r37->nodes);
    CHECK(planner.next()->nodes == r38->nodes);
}
