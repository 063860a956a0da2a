// SPDX-License-Identifier: MIT
// Belady's rule on hand-built plans, through a real tracker fed opens at
// injected times: when each file falls due next, and that the RAM tier gives
// up the file needed farthest in the future first.
#include "prefetch/eviction.hpp"
#include "tracker_plans.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::prefetch;
using namespace clairfs::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t index_size = 40;

track::TrackerOptions loaders(uint32_t batch, uint32_t workers) {
    track::TrackerOptions o;
    o.layout = {batch, workers};
    o.min_opens = 1000; // never judged: these tests open few files
    return o;
}

// Opens the files at `positions` of plan `e`, one second apart.
void open_at(track::Tracker& t, const PlanPtr& e, std::initializer_list<uint32_t> positions,
             uint32_t pid = 0) {
    auto now = t0;
    for (uint32_t p : positions) {
        track::Observation o = t.observe(e->nodes[p], now += 1s, pid);
        REQUIRE(o.matched);
    }
}

const std::vector<uint32_t> no_window(index_size, 0);
const WindowMarks empty_window{no_window, no_window, 1, 0};

std::vector<index::NodeId> order_of(const track::Snapshot& snap,
                                    const std::vector<index::NodeId>& held,
                                    const WindowMarks& w = empty_window) {
    std::vector<index::NodeId> out;
    for (auto& [rank, id] : eviction_order(snap, held, w)) out.push_back(id);
    return out;
}

} // namespace

TEST_CASE("next use counts positions from the frontier, then into the next epoch") {
    // Epoch 0 opens nodes 1..10 in order, epoch 1 in reverse.
    auto e0 = make_plan(0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, index_size);
    auto e1 = make_plan(1, {10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, index_size);
    track::Tracker t({0}, {source_of({e0, e1})}, loaders(1, 0));
    open_at(t, e0, {0, 1, 2});
    track::Snapshot snap = t.snapshot(t0 + 10s);
    REQUIRE(snap.ranks[0].frontier == 3);

    CHECK(next_use(snap, 4) == 0); // the very next open
    CHECK(next_use(snap, 10) == 6);
    // Node 1 was opened: next at position 9 of epoch 1, 7 + 9 from here.
    CHECK(next_use(snap, 1) == 7 + 9);
    CHECK(next_use(snap, 3) == 7 + 7);
    CHECK(next_use(snap, 0) == UINT64_MAX);  // not a sample
    CHECK(next_use(snap, 30) == UINT64_MAX); // a file of no epoch

    // Farthest first: the non-sample, then the files opened this epoch by
    // their position in the next, then this epoch's by position.
    std::vector<index::NodeId> held = {4, 10, 1, 3, 0, 7};
    CHECK(order_of(snap, held) == std::vector<index::NodeId>{4, 7, 10, 3, 1, 0});
}

TEST_CASE("after the last epoch's opens, a file read is never needed again and goes first") {
    auto e0 = make_plan(0, {1, 2, 3, 4, 5, 6}, index_size);
    track::Tracker t({0}, {source_of({e0})}, loaders(1, 0));
    open_at(t, e0, {0, 1});
    track::Snapshot snap = t.snapshot(t0 + 10s);
    CHECK(next_use(snap, 1) == UINT64_MAX);
    CHECK(next_use(snap, 2) == UINT64_MAX);
    CHECK(next_use(snap, 3) == 0);
    auto order = order_of(snap, {1, 6, 3, 2});
    REQUIRE(order.size() == 4);
    CHECK(order[0] == 3);
    CHECK(order[1] == 6);
    // 1 and 2 tie at "never": both rank behind every file still to come.
    CHECK(std::is_permutation(order.begin() + 2, order.end(),
                              std::vector<index::NodeId>{1, 2}.begin()));
}

TEST_CASE("opens out of order: a position opened ahead of the frontier does not count") {
    // Batch 2, two workers: worker 0 takes positions 0,1,4,5,8,9; worker 1
    // 2,3,6,7. Worker 0 runs two batches ahead of worker 1.
    auto e0 = make_plan(0, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, index_size);
    auto e1 = make_plan(1, {2, 4, 6, 8, 10, 1, 3, 5, 7, 9}, index_size);
    track::Tracker t({0}, {source_of({e0, e1})}, loaders(2, 2));
    open_at(t, e0, {0, 1, 4, 5});
    track::Snapshot snap = t.snapshot(t0 + 10s);
    REQUIRE(snap.ranks[0].frontier == 2);
    CHECK(next_use(snap, 3) == 0);
    CHECK(next_use(snap, 4) == 1);
    // Node 5 (position 4) was opened already: its next use is in epoch 1,
    // at position 7, after the 8 positions left of this epoch.
    CHECK(next_use(snap, 5) == 8 + 7);
    CHECK(next_use(snap, 7) == 4);
}

TEST_CASE("a file opened twice in one epoch is due at its next unopened position") {
    // A sampler with replacement may draw node 3 at positions 1 and 5.
    auto e0 = make_plan(0, {1, 3, 2, 4, 5, 3, 6}, index_size);
    auto e1 = make_plan(1, {6, 5, 4, 3, 2, 1}, index_size);
    track::Tracker t({0}, {source_of({e0, e1})}, loaders(1, 0));
    open_at(t, e0, {0, 1, 2});
    track::Snapshot snap = t.snapshot(t0 + 10s);
    CHECK(next_use(snap, 3) == 5 - 3);
}

TEST_CASE("two local ranks: a file is due when the first of them needs it") {
    auto r0e0 = make_plan(0, {1, 2, 3, 4, 5, 6}, index_size);
    auto r0e1 = make_plan(1, {6, 5, 4, 3, 2, 1}, index_size);
    auto r1e0 = make_plan(0, {11, 12, 13, 6, 14, 15}, index_size);
    auto r1e1 = make_plan(1, {15, 14, 13, 12, 11, 1}, index_size);
    track::Tracker t({0, 1}, {source_of({r0e0, r0e1}), source_of({r1e0, r1e1})}, loaders(1, 0));
    open_at(t, r0e0, {0, 1, 2}, 100); // rank 0 three ahead ...
    open_at(t, r1e0, {0}, 200);       // ... rank 1 one
    track::Snapshot snap = t.snapshot(t0 + 10s);
    REQUIRE(snap.ranks.size() == 2);
    // Node 6: 2 ahead of rank 0 (position 5, frontier 3) and of rank 1
    // (position 3, frontier 1).
    CHECK(next_use(snap, 6) == 2);
    // Node 1: rank 0 is done with it this epoch (next: 3 + 5); rank 1 reads
    // it last in its epoch 1: 5 + 5.
    CHECK(next_use(snap, 1) == 3 + 5);
    CHECK(next_use(snap, 12) == 0);
    CHECK(next_use(snap, 15) == 4);
    CHECK(order_of(snap, {1, 15, 12, 6}) == std::vector<index::NodeId>{12, 6, 15, 1});
}

namespace {

// Epoch 0 opens nodes 1..8 in order, epoch 1 in reverse; the first open is
// done. The scheduler's window this round (round 7): nodes 3 and 2, in
// that order; node 5 carries a stale stamp from round 6.
struct WindowOf3And2 {
    track::Snapshot snap;
    std::vector<uint32_t> in_window = std::vector<uint32_t>(index_size, 0);
    std::vector<uint32_t> window_index = std::vector<uint32_t>(index_size, 0);
    WindowMarks marks{in_window, window_index, 7, 2};

    WindowOf3And2() {
        auto e0 = make_plan(0, {1, 2, 3, 4, 5, 6, 7, 8}, index_size);
        auto e1 = make_plan(1, {8, 7, 6, 5, 4, 3, 2, 1}, index_size);
        track::Tracker t({0}, {source_of({e0, e1})}, loaders(1, 0));
        open_at(t, e0, {0});
        snap = t.snapshot(t0 + 10s);
        in_window[3] = 7, window_index[3] = 0;
        in_window[2] = 7, window_index[2] = 1;
        in_window[5] = 6, window_index[5] = 0;
    }
};

} // namespace

TEST_CASE("window files rank by window index, before every file outside it") {
    WindowOf3And2 f;
    auto ranked = eviction_order(f.snap, {5, 2, 4, 3}, f.marks);
    REQUIRE(ranked.size() == 4);
    CHECK(ranked[0] == std::pair<uint64_t, index::NodeId>{0, 3});
    CHECK(ranked[1] == std::pair<uint64_t, index::NodeId>{1, 2});
    // Outside the window: window size + next use (node 4 at 2, node 5 at 3).
    CHECK(ranked[2] == std::pair<uint64_t, index::NodeId>{2 + 2, 4});
    CHECK(ranked[3] == std::pair<uint64_t, index::NodeId>{2 + 3, 5});
}

TEST_CASE("with the group's next use, a home keeps what any node needs first") {
    WindowOf3And2 f;
    const WindowMarks& w = f.marks;
    // Nodes 2 and 20 are homed here; another node's rank opens 20 next
    // (due 0), 2 only later (due 9). Node 30 is homed elsewhere.
    GroupDue group = [](index::NodeId id) -> uint64_t {
        return id == 20 ? 0 : id == 2 ? 9 : UINT64_MAX;
    };
    Timeline future(f.snap);
    CHECK(due(future, w, group, 20) == 0);           // no local use at all
    CHECK(due(future, w, group, 2) == 1);            // its window index comes first
    CHECK(due(future, w, group, 5) == 2 + 3);        // not homed here: local use only
    CHECK(due(future, w, group, 30) == UINT64_MAX);  // nobody needs it
    auto ranked = eviction_order(future, {5, 2, 30, 20, 3}, w, group);
    std::vector<index::NodeId> order;
    for (auto& [when, id] : ranked) order.push_back(id);
    CHECK(order == std::vector<index::NodeId>{3, 20, 2, 5, 30}); // ties by id
    // Without the group, node 20 is never due: among the first to go.
    auto alone = eviction_order(future, {5, 2, 30, 20, 3}, w);
    CHECK(alone[3] == std::pair<uint64_t, index::NodeId>{UINT64_MAX, 20});
}
