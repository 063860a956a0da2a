// SPDX-License-Identifier: MIT
// GroupUses: when the group's next rank opens each file, checked the slow
// way against every rank's own planned epochs (RankPlanner).
#include "clairfs/plan/epoch_plan.hpp"
#include "plan_checks.hpp"
#include "prefetch/group_uses.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;

namespace {

// Every rank's first two epochs.
std::vector<std::vector<std::shared_ptr<const plan::EpochPlan>>>
rank_epochs(const order::JobSpec& spec, const layout::Dataset& ds, const index::Index& idx) {
    std::vector<std::vector<std::shared_ptr<const plan::EpochPlan>>> out;
    for (uint32_t r = 0; r < spec.world_size; ++r) {
        order::JobSpec s = spec;
        s.rank = r;
        plan::RankPlanner planner(s, ds, idx);
        auto e0 = planner.next();
        auto e1 = planner.next();
        REQUIRE(e0);
        REQUIRE(e1);
        out.push_back({e0, e1});
    }
    return out;
}

// The slow way: the first position at or after `at` where some rank opens
// `id` in epoch 0, else the epoch's rest plus its first position in epoch 1.
uint64_t brute_next_use(const std::vector<std::vector<std::shared_ptr<const plan::EpochPlan>>>& e,
                        index::NodeId id, uint64_t at) {
    uint64_t best = UINT64_MAX;
    for (const auto& rank : e) {
        const auto& now = *rank[0];
        for (uint64_t p = at; p < now.size(); ++p)
            if (now.nodes[p] == id) best = std::min(best, p - at);
        for (uint64_t p = 0; p < rank[1]->size(); ++p)
            if (rank[1]->nodes[p] == id) best = std::min(best, now.size() - at + p);
    }
    return best;
}

} // namespace

TEST_CASE("the group's next use is the earliest position any rank opens a file") {
    auto idx = flat_index(3, 19); // 57 samples: 19 per rank, no padding
    plan::Job job;
    job.dataset = sorted_dataset(idx);
    job.spec.sampler = order::SamplerKind::distributed;
    job.spec.world_size = 3;
    job.spec.seed = 42;
    job.spec.epochs = 2;
    job.spec.batch_size = 4;
    uint64_t opened = 19; // positions each rank opens an epoch
    SUBCASE("from the first epoch") {}
    SUBCASE("from a later epoch") { job.spec.start_epoch = 5; }
    SUBCASE("the loader drops its short last batch: 3 files a rank unread") {
        job.spec.drop_last = true;
        opened = 16;
    }
    REQUIRE(order::validate(job.spec, 57) == "");
    auto epochs = rank_epochs(job.spec, job.dataset, idx);
    REQUIRE(epochs[0][0]->seed_epoch);
    REQUIRE(epochs[0][1]->seed_epoch);
    const uint64_t size = epochs[0][0]->size();
    REQUIRE(size == opened);

    prefetch::GroupUses uses;
    for (uint64_t at : {uint64_t{0}, uint64_t{7}, size - 1, size}) {
        uses.set(job, idx, *epochs[0][0]->seed_epoch, size, at, epochs[0][1]->seed_epoch);
        size_t in_both = 0;
        for (index::NodeId id = 0; id < idx.size(); ++id) {
            uint64_t want = brute_next_use(epochs, id, at);
            CHECK_MESSAGE(uses.next_use(id) == want, "node " << id << " from position " << at);
            in_both += want != UINT64_MAX;
        }
        if (opened == 19) CHECK(in_both == 57); // every file is some rank's next epoch
    }
    {
        INFO("without the next epoch, files whose turn has passed are never used");
        uses.set(job, idx, *epochs[0][0]->seed_epoch, size, 10, std::nullopt);
        for (index::NodeId id = 0; id < idx.size(); ++id) {
            bool later = false;
            for (const auto& rank : epochs)
                for (uint64_t p = 10; p < size; ++p) later |= rank[0]->nodes[p] == id;
            CHECK((uses.next_use(id) != UINT64_MAX) == later);
        }
    }
}

TEST_CASE("before anything is set, no file has a next use") {
    prefetch::GroupUses uses;
    CHECK(uses.next_use(0) == UINT64_MAX);
    CHECK(uses.next_use(12345) == UINT64_MAX);
}
