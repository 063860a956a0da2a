// SPDX-License-Identifier: MIT
// The tracker's planner thread: an open that begins an epoch never builds
// the one after it, opens go on while that build runs, and an open of the
// epoch still being built waits for it instead of counting as a miss.
#include "tracker_plans.hpp"

#include <atomic>
#include <future>
#include <latch>
#include <thread>

using namespace clairfs;
using namespace clairfs::test;
using namespace std::chrono_literals;

namespace {

// Nodes 1..n are the samples' (plans.hpp), the rest other files.
track::TrackerOptions options(uint32_t batch, uint32_t n = 0) {
    track::TrackerOptions o;
    o.layout = {batch, 0};
    if (n) {
        o.sample_nodes.assign(n + 1 + extra_nodes, 0);
        for (uint32_t x = 1; x <= n; ++x) o.sample_nodes[x] = 1;
    }
    return o;
}

// Gives plans in order, like source_of, but the third call (the first one
// after construction) waits for `gate` and notes which thread made it.
struct GatedSource {
    std::vector<PlanPtr> plans;
    size_t at = 0;
    std::latch entered{1}, gate{1};
    std::atomic<std::thread::id> builder{};

    track::EpochSource source() {
        return [this]() -> PlanPtr {
            if (at == 2) {
                builder = std::this_thread::get_id();
                entered.count_down();
                gate.wait();
            }
            return at < plans.size() ? plans[at++] : nullptr;
        };
    }
};

} // namespace

TEST_CASE("an open that begins an epoch returns while the epoch after it is still being built") {
    const uint32_t n = 300;
    GatedSource src{plans_of(random_spec(7, 3), n)};
    auto& plans = src.plans;
    track::Tracker t({0}, {src.source()}, options(4, n));
    // Epoch 0 whole, then epoch 1's first open: its observe asks for epoch 2.
    for (index::NodeId x : plans[0]->nodes) REQUIRE(t.observe(x, t0).matched);
    track::Observation begin = t.observe(plans[1]->nodes[0], t0);
    CHECK(begin.new_epoch);
    src.entered.wait(); // epoch 2 is being built, and stays so
    CHECK(src.builder.load() != std::this_thread::get_id());
    // The rest of epoch 1 is matched, and snapshots are taken, meanwhile.
    // Built under the tracker's lock, the build would block these for good.
    std::future<uint64_t> rest = std::async(std::launch::async, [&] {
        uint64_t matched = 0;
        for (size_t p = 1; p < plans[1]->size(); ++p) {
            matched += t.observe(plans[1]->nodes[p], t0).matched;
            (void)t.snapshot(t0);
        }
        return matched;
    });
    REQUIRE(rest.wait_for(30s) == std::future_status::ready);
    CHECK(rest.get() == n - 1);
    track::Snapshot during = t.snapshot(t0);
    CHECK(during.ranks[0].next == nullptr);
    CHECK_FALSE(during.ranks[0].finished); // epoch 2 may yet exist
    CHECK(during.matched == n);

    // An open of a file no sample opens never waits for the plan.
    std::future<bool> other = std::async(std::launch::async, [&] {
        return t.observe(n + 5, t0).dataset_file; // past the samples' nodes
    });
    REQUIRE(other.wait_for(30s) == std::future_status::ready);
    CHECK_FALSE(other.get());

    // Epoch 2's first open waits for its plan (not under the lock), then
    // matches as the start of a new epoch instead of counting as a miss.
    std::future<track::Observation> first = std::async(std::launch::async, [&] {
        return t.observe(plans[2]->nodes[0], t0);
    });
    (void)t.snapshot(t0); // the waiting open holds no lock
    src.gate.count_down();
    REQUIRE(first.wait_for(30s) == std::future_status::ready);
    track::Observation o = first.get();
    CHECK(o.matched);
    CHECK(o.new_epoch);
    CHECK(o.epoch == 2);
    track::Snapshot after = settled(t, t0);
    CHECK(after.mode == track::Mode::clairvoyant);
    CHECK(after.opens == 1);
    CHECK(after.matched == 1);
}

TEST_CASE("the last epoch: the planner finds no more, and the rank is finished") {
    const uint32_t n = 50;
    auto plans = plans_of(random_spec(3, 2), n);
    int calls = 0;
    track::Tracker t({0}, {source_of(plans, &calls)}, options(5));
    for (const auto& e : plans)
        for (index::NodeId x : e->nodes) REQUIRE(t.observe(x, t0).matched);
    track::Snapshot snap = settled(t, t0);
    CHECK(calls == 3); // two at construction, one that found nothing
    CHECK(snap.ranks[0].finished);
    CHECK(snap.epoch == 2);
    // A batch more of opens (options(5): batch 5): a job past its
    // registered epochs. One alone is a stray open, not an epoch.
    t.observe(plans[0]->nodes[0], t0);
    CHECK(t.mode() == track::Mode::clairvoyant);
    for (size_t p = 1; p < 5; ++p) t.observe(plans[0]->nodes[p], t0);
    CHECK(t.mode() == track::Mode::fallback);
}

TEST_CASE("a source that throws on the planner thread ends the prediction, not the process") {
    const uint32_t n = 40;
    auto plans = plans_of(random_spec(9, 3), n);
    size_t at = 0;
    track::EpochSource src = [&]() -> PlanPtr {
        if (at == 2) throw std::bad_alloc();
        return plans[at++];
    };
    track::Tracker t({0}, {src}, options(4));
    for (index::NodeId x : plans[0]->nodes) REQUIRE(t.observe(x, t0).matched);
    CHECK(t.observe(plans[1]->nodes[0], t0).new_epoch);
    track::Snapshot snap = settled(t, t0);
    CHECK(snap.mode == track::Mode::fallback);
    CHECK(snap.reason.find("could not build") != std::string::npos);
}
