// SPDX-License-Identifier: MIT
// The tracker following opens that keep to the registered order: worker
// streams interleaved by timing, epoch changes, several local ranks, opens
// that never come, and files that are no samples.
#include "tracker_plans.hpp"

#include <atomic>
#include <numeric>
#include <thread>

using namespace clairfs;
using namespace clairfs::test;
using namespace std::chrono_literals;

TEST_CASE("two workers interleaved at random: every open matches, the frontier is exact") {
    const uint32_t n = 50;
    auto s = random_spec(1, 2);
    auto plans = plans_of(s, n);
    auto opt = tracker_options(3, 2);
    track::Tracker t({0}, {source_of(plans)}, opt);
    std::mt19937 rng(7);
    for (uint64_t e = 0; e < 2; ++e) {
        std::vector<bool> opened(n, false);
        auto order = worker_opens(opt.layout, n, rng);
        REQUIRE(order.size() == n);
        for (size_t i = 0; i < order.size(); ++i) {
            uint64_t p = order[i];
            track::Observation o = t.observe(plans[e]->nodes[p], t0);
            CHECK(o.dataset_file);
            CHECK(o.matched);
            CHECK(o.slot == 0);
            CHECK(o.epoch == e);
            CHECK(o.position == p);
            CHECK(o.new_epoch == (e > 0 && i == 0));
            opened[p] = true;
            track::Snapshot snap = settled(t, t0);
            REQUIRE(snap.ranks.size() == 1);
            const track::RankProgress& r = snap.ranks[0];
            CHECK(r.frontier == first_unopened(opened));
            CHECK(r.opened == i + 1);
            for (uint64_t q = 0; q < n; ++q) CHECK(r.opened_at(q) == opened[q]);
            CHECK(snap.epoch == e + (e == 1 && i + 1 == n ? 1 : 0));
            CHECK(snap.match_rate == 1.0);
        }
    }
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(t.mode() == track::Mode::clairvoyant);
    CHECK(snap.opens == 1); // counted since epoch 1 ended at the last open: itself
    CHECK(snap.ranks[0].finished);
    CHECK(snap.ranks[0].frontier == snap.ranks[0].current->size());
}

TEST_CASE("with replacement a sample's later occurrences match in turn") {
    const uint32_t n = 20;
    auto s = random_spec(12, 1);
    s.replacement = true;
    s.num_samples = 90;
    auto plans = plans_of(s, n);
    REQUIRE_FALSE(plans[0]->next_same.empty());
    SUBCASE("one stream: each open lands on its own position") {
        track::Tracker t({0}, {source_of(plans)}, tracker_options(3, 0));
        for (uint64_t p = 0; p < plans[0]->size(); ++p) {
            track::Observation o = t.observe(plans[0]->nodes[p], t0);
            CHECK(o.matched);
            CHECK(o.position == p);
        }
        CHECK(settled(t, t0).ranks[0].finished);
    }
    SUBCASE("two workers: a repeat due in both workers' windows at once is ambiguous") {
        // A node due next in two workers at once may be credited to the wrong
        // one, and that can cost an open later. With 20 nodes that happens
        // often; it must neither derail a worker nor stop the epoch ending.
        auto opt = tracker_options(3, 2);
        track::Tracker t({0}, {source_of(plans)}, opt);
        std::mt19937 rng(13);
        for (uint64_t p : worker_opens(opt.layout, plans[0]->size(), rng))
            CHECK(t.observe(plans[0]->nodes[p], t0).dataset_file);
        track::Snapshot snap = settled(t, t0);
        CHECK(snap.match_rate >= 0.9);
        CHECK(snap.ranks[0].finished);
        CHECK(snap.ranks[0].frontier ==
              snap.ranks[0].current->size()); // every position counts as opened
    }
}

TEST_CASE("with replacement over a larger dataset, two workers lose (almost) nothing") {
    const uint32_t n = 500;
    auto s = random_spec(14, 2);
    s.replacement = true;
    s.num_samples = 1000;
    auto plans = plans_of(s, n);
    auto opt = tracker_options(4, 2);
    track::Tracker t({0}, {source_of(plans)}, opt);
    std::mt19937 rng(15);
    uint64_t matched = 0;
    for (uint64_t p : worker_opens(opt.layout, plans[0]->size(), rng))
        matched += t.observe(plans[0]->nodes[p], t0).matched;
    CHECK(matched >= 995);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.ranks[0].frontier == 1000);
    CHECK(snap.mode == track::Mode::clairvoyant);
}

TEST_CASE("the first open of the next epoch advances the rank and restarts the count") {
    const uint32_t n = 40;
    auto plans = plans_of(random_spec(3, 3), n);
    int calls = 0;
    auto opt = tracker_options(4, 0);
    track::Tracker t({5}, {source_of(plans, &calls)}, opt);
    CHECK(calls == 2); // current and next fetched at construction
    for (uint64_t p = 0; p < n; ++p) CHECK(t.observe(plans[0]->nodes[p], t0).matched);
    track::Snapshot before = settled(t, t0);
    CHECK(before.epoch == 0);
    CHECK(before.opens == n);
    CHECK(before.ranks[0].rank == 5);
    CHECK(before.ranks[0].frontier == n);
    CHECK(before.ranks[0].current == plans[0]);
    CHECK(before.ranks[0].next == plans[1]);

    // Epoch 1's first sample is opened by its worker 0.
    track::Observation o = t.observe(plans[1]->nodes[0], t0);
    CHECK(o.matched);
    CHECK(o.new_epoch);
    CHECK(o.epoch == 1);
    t.wait_for_plans(); // the planner thread, not the open, built epoch 2
    CHECK(calls == 3);
    track::Snapshot after = settled(t, t0);
    CHECK(after.epoch == 1);
    CHECK(after.opens == 1);
    CHECK(after.matched == 1);
    CHECK(after.ranks[0].current == plans[1]);
    CHECK(after.ranks[0].next == plans[2]);
    CHECK(after.ranks[0].opened == 1);
    CHECK(after.ranks[0].frontier == 1);
    CHECK(after.ranks[0].cursors == std::vector<uint64_t>{1});
}

TEST_CASE("two local ranks of a padded DistributedSampler, their opens interleaved") {
    const uint32_t n = 103; // padded to 104: rank 1's last sample is rank 0's first
    order::JobSpec s;
    s.sampler = order::SamplerKind::distributed;
    s.world_size = 2;
    s.epochs = 2;
    s.seed = 17;
    auto opt = tracker_options(4, 2);
    std::vector<std::vector<PlanPtr>> plans;
    for (uint32_t r = 0; r < 2; ++r) {
        s.rank = r;
        plans.push_back(plans_of(s, n));
    }
    REQUIRE(plans[1][0]->nodes.back() == plans[0][0]->nodes.front());
    track::Tracker t({0, 1}, {source_of(plans[0]), source_of(plans[1])}, opt);
    std::mt19937 rng(11);
    for (uint64_t e = 0; e < 2; ++e) {
        std::vector<std::vector<uint64_t>> opens;
        for (uint32_t r = 0; r < 2; ++r) opens.push_back(worker_opens(opt.layout, 52, rng));
        size_t at[2] = {0, 0};
        while (at[0] < 52 || at[1] < 52) {
            uint32_t r = at[0] == 52 ? 1 : at[1] == 52 ? 0 : rng() % 2;
            uint64_t p = opens[r][at[r]++];
            index::NodeId node = plans[r][e]->nodes[p];
            track::Observation o = t.observe(node, t0);
            CHECK(o.matched);
            CHECK(o.epoch == e);
            // Only the shared sample may be credited to the other rank.
            if (node != plans[0][e]->nodes.front() || plans[1][e]->nodes.back() != node) {
                CHECK(o.slot == r);
                CHECK(o.position == p);
            }
        }
        track::Snapshot snap = settled(t, t0);
        CHECK(snap.match_rate == 1.0);
        CHECK(snap.mode == track::Mode::clairvoyant);
        for (const auto& r : snap.ranks) {
            CHECK(r.frontier == 52);
            CHECK(r.opened == 52);
        }
    }
    CHECK(settled(t, t0).epoch == 2);
}

TEST_CASE("the slowest rank's epoch is the node's epoch") {
    const uint32_t n = 12;
    auto a = plans_of(random_spec(1, 3), n);
    // Rank 1 reads other files, so no open of rank 0 can be credited to it.
    std::vector<PlanPtr> b;
    for (const auto& e : plans_of(random_spec(2, 3), n)) {
        std::vector<index::NodeId> nodes = e->nodes;
        for (auto& x : nodes) x += 100;
        b.push_back(make_plan(e->epoch, std::move(nodes), 200));
    }
    track::Tracker t({0, 1}, {source_of(a), source_of(b)}, tracker_options(1, 0));
    for (uint64_t p = 0; p < n; ++p) CHECK(t.observe(a[0]->nodes[p], t0).matched);
    // Rank 0 enters epoch 1; rank 1 has not begun: the count stays epoch 0's.
    CHECK(t.observe(a[1]->nodes[0], t0).new_epoch);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.epoch == 0);
    CHECK(snap.opens == n + 1);
}

TEST_CASE("an open skipped within the slack does not derail its worker") {
    const uint32_t n = 64;
    auto plans = plans_of(random_spec(5, 1), n);
    auto opt = tracker_options(4, 2); // slack 0: one batch
    SUBCASE("default slack: up to a batch of opens missing") {
        track::Tracker t({0}, {source_of(plans)}, opt);
        for (uint64_t p = 0; p < n; ++p) {
            uint64_t s = opt.layout.stream_index(p);
            uint32_t w = opt.layout.worker_of(p);
            // Worker 0 never opens its stream index 3; worker 1 misses 8..11, a batch.
            if ((w == 0 && s == 3) || (w == 1 && s >= 8 && s < 12)) continue;
            CHECK(t.observe(plans[0]->nodes[p], t0).matched);
        }
        track::Snapshot snap = settled(t, t0);
        CHECK(snap.match_rate == 1.0);
        CHECK(snap.ranks[0].frontier == n);
    }
    SUBCASE("five missing in a row is past one batch of slack") {
        for (uint32_t slack : {0u, 5u}) {
            opt.slack = slack;
            track::Tracker t({0}, {source_of(plans)}, opt);
            // Worker 0's stream indices 0..4 never come; index 5 is one past the slack.
            uint64_t p = opt.layout.position(0, 5);
            CHECK(t.observe(plans[0]->nodes[p], t0).matched == (slack == 5));
        }
    }
}

TEST_CASE("dangling samples are stepped over, also at a stream's end") {
    const index::NodeId gone = layout::no_node;
    auto e0 = make_plan(0, {gone, 1, gone, 2, 3, gone}, 8);
    auto e1 = make_plan(1, {4, gone, 5, gone}, 8);
    track::Tracker t({0}, {source_of({e0, e1})}, tracker_options(1, 0));
    CHECK(settled(t, t0).ranks[0].frontier == 1);
    for (index::NodeId x : {1u, 2u, 3u}) CHECK(t.observe(x, t0).matched);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.ranks[0].frontier == 6);
    CHECK(snap.epoch == 0);
    CHECK(t.observe(4, t0).new_epoch);
    CHECK(t.observe(5, t0).matched);
    snap = settled(t, t0);
    CHECK(snap.epoch == 2); // past its last epoch
    CHECK(snap.ranks[0].finished);
    CHECK(snap.ranks[0].frontier == snap.ranks[0].current->size());
    CHECK(snap.ranks[0].next == nullptr);
}

TEST_CASE("opens of files that are no samples are not counted at all") {
    const uint32_t n = 30;
    auto plans = plans_of(random_spec(9, 2), n);
    track::TrackerOptions opt = tracker_options(1, 0);
    opt.min_opens = 4;
    track::Tracker t({0}, {source_of(plans)}, opt);
    for (int i = 0; i < 100; ++i)
        for (index::NodeId x : {0u, n + 1, n + extra_nodes, 5000u, layout::no_node}) {
            track::Observation o = t.observe(x, t0);
            CHECK_FALSE(o.dataset_file);
            CHECK_FALSE(o.matched);
        }
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.opens == 0);
    CHECK(snap.match_rate == 1.0);
    CHECK(snap.mode == track::Mode::clairvoyant);
    CHECK(snap.ranks[0].opened == 0);
}

TEST_CASE("epoch_seconds runs from the epoch's first matched open, on the clock passed in") {
    const uint32_t n = 10;
    auto plans = plans_of(random_spec(4, 2), n);
    track::Tracker t({0}, {source_of(plans)}, tracker_options(1, 0));
    CHECK(settled(t, t0 + 9s).ranks[0].epoch_seconds == 0);
    CHECK(t.observe(plans[0]->nodes[0], t0).matched);
    CHECK(t.observe(plans[0]->nodes[1], t0 + 1s).matched);
    CHECK(t.observe(n + 2, t0 + 2s).dataset_file == false);
    CHECK(settled(t, t0 + 5s).ranks[0].epoch_seconds == doctest::Approx(5.0));
    for (uint64_t p = 2; p < n; ++p) CHECK(t.observe(plans[0]->nodes[p], t0 + 10s).matched);
    const auto t1 = t0 + 60s;
    CHECK(t.observe(plans[1]->nodes[0], t1).new_epoch);
    CHECK(settled(t, t1 + 2500ms).ranks[0].epoch_seconds == doctest::Approx(2.5));
}

TEST_CASE("mode names") {
    CHECK(std::string(track::mode_name(track::Mode::unregistered)) == "unregistered");
    CHECK(std::string(track::mode_name(track::Mode::clairvoyant)) == "clairvoyant");
    CHECK(std::string(track::mode_name(track::Mode::fallback)) == "fallback");
}

TEST_CASE("ranks opening from their own threads while the scheduler takes snapshots") {
    const uint32_t n = 2000, ranks = 3;
    std::vector<std::vector<PlanPtr>> plans(ranks);
    std::vector<track::EpochSource> sources;
    for (uint32_t r = 0; r < ranks; ++r) {
        for (const auto& e : plans_of(random_spec(20 + r, 2), n)) {
            std::vector<index::NodeId> nodes = e->nodes;
            for (auto& x : nodes) x += r * n; // each rank its own files
            plans[r].push_back(make_plan(e->epoch, std::move(nodes), ranks * n + 1));
        }
        sources.push_back(source_of(plans[r]));
    }
    track::Tracker t({0, 1, 2}, std::move(sources), tracker_options(1, 0));
    std::atomic<uint64_t> matched{0};
    std::atomic<bool> done{false};
    std::thread scheduler([&] {
        while (!done) {
            track::Snapshot snap = t.snapshot(t0);
            for (const auto& r : snap.ranks)
                if (r.current) CHECK(r.frontier <= r.current->size());
            CHECK(t.mode() == track::Mode::clairvoyant);
        }
    });
    std::vector<std::thread> loaders;
    for (uint32_t r = 0; r < ranks; ++r)
        loaders.emplace_back([&, r] {
            for (const auto& e : plans[r])
                for (index::NodeId x : e->nodes) matched += t.observe(x, t0).matched;
        });
    for (auto& l : loaders) l.join();
    done = true;
    scheduler.join();
    CHECK(matched == uint64_t{ranks} * 2 * n);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.epoch == 2);
    CHECK(snap.mode == track::Mode::clairvoyant);
}

TEST_CASE("a loader process's opens go to the rank it matched before") {
    // Rank 0's epoch 1 is rank 1's epoch 0: while rank 1 lags an epoch, the
    // files alone cannot tell the ranks apart.
    auto a0 = make_plan(0, {1, 2, 3, 4}, 9), a1 = make_plan(1, {5, 6, 7, 8}, 9);
    auto b0 = make_plan(0, {5, 6, 7, 8}, 9), b1 = make_plan(1, {1, 2, 3, 4}, 9);
    auto run = [&](uint32_t pid0, uint32_t pid1) {
        track::Tracker t({0, 1}, {source_of({a0, a1}), source_of({b0, b1})}, tracker_options(1, 0));
        for (index::NodeId x : {1u, 2u, 3u, 4u}) CHECK(t.observe(x, t0, pid0).slot == 0);
        return std::pair{t.observe(5, t0, pid0), t.observe(5, t0, pid1)};
    };
    auto [rank0, rank1] = run(100, 200);
    CHECK(rank0.matched);
    CHECK(rank0.slot == 0);
    CHECK(rank0.new_epoch);
    CHECK(rank1.matched);
    CHECK(rank1.slot == 1);
    CHECK(rank1.epoch == 0);
    // Without pids the lagging rank's stream claims rank 0's open.
    auto [blind0, blind1] = run(0, 0);
    CHECK(blind0.slot == 1);
    CHECK_FALSE(blind0.new_epoch);
}

TEST_CASE("threads opening out of order within `behind`: every open matches once") {
    const uint32_t n = 60;
    auto plans = plans_of(random_spec(4, 2), n);
    auto opt = tracker_options(8, 0);
    opt.behind = 8;
    track::Tracker t({0}, {source_of(plans)}, opt);
    for (uint64_t e = 0; e < 2; ++e) {
        // tf.data's parallel map: positions finish in any order within
        // blocks of four, as threads do.
        std::vector<uint64_t> order(n);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(static_cast<uint32_t>(e) + 3);
        for (size_t b = 0; b < n; b += 4)
            std::shuffle(order.begin() + b, order.begin() + std::min<size_t>(b + 4, n), rng);
        for (uint64_t p : order) {
            track::Observation o = t.observe(plans[e]->nodes[p], t0);
            CHECK(o.matched);
            CHECK(o.epoch == e);
            CHECK(o.position == p);
        }
        track::Snapshot snap = settled(t, t0);
        CHECK(snap.ranks[0].opened == n);
        CHECK(snap.match_rate == 1.0);
    }
    track::Snapshot end = settled(t, t0);
    CHECK(end.ranks[0].finished);
    // The epoch's counts restart with each epoch; the run's do not.
    CHECK(end.run_opens == 2 * n);
    CHECK(end.run_matched == 2 * n);
}

TEST_CASE("behind the cursor: an open already taken, or farther back than `behind`, does not match") {
    const uint32_t n = 40;
    auto plans = plans_of(random_spec(9, 1), n);
    auto opt = tracker_options(4, 0);
    opt.behind = 2;
    track::Tracker t({0}, {source_of(plans)}, opt);
    const auto& nodes = plans[0]->nodes;
    CHECK(t.observe(nodes[3], t0).position == 3); // cursor 4; 0, 1, 2 outstanding
    CHECK(t.observe(nodes[2], t0).matched);       // one behind: fills the gap
    CHECK_FALSE(t.would_match(nodes[2], 0, 0));   // taken already
    CHECK_FALSE(t.would_match(nodes[1], 0, 0));   // 4 - 1 = 3 > behind
    CHECK(t.would_match(nodes[4], 0, 0));         // the cursor itself
    CHECK(t.observe(nodes[5], t0).matched);       // cursor 6: 4 is two behind now
    CHECK(t.observe(nodes[4], t0).matched);
    CHECK_FALSE(t.would_match(nodes[4], 0, 0));
}
