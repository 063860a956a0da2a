// SPDX-License-Identifier: MIT
// The tracker as a job over byte ranges uses it (TrackerOptions::next_at_end,
// match_distance): opens there are READs, some of which the kernel made, so
// one READ that fits the next epoch's first samples must not end the epoch
// under way, and the READ's candidate nearest a cursor is the one told.
#include "tracker_plans.hpp"

using namespace clairfs;
using namespace clairfs::test;
using namespace std::chrono_literals;

namespace {

constexpr size_t keys = 20;

track::TrackerOptions reads_options() {
    track::TrackerOptions o;
    o.layout = {1, 0};
    o.slack = 2;
    o.next_at_end = true;
    o.min_opens = 1000; // never judged here
    return o;
}

} // namespace

TEST_CASE("next_at_end: a stray READ of the next epoch's first sample does not end the epoch") {
    // Epoch 0 reads keys 0..9, epoch 1 reads them in reverse.
    auto e0 = make_plan(0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, keys);
    auto e1 = make_plan(1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, keys);
    track::Tracker t({0}, {source_of({e0, e1})}, reads_options());
    t.wait_for_plans();
    const uint32_t pid = 100, loader = 10;
    for (index::NodeId k : {0, 1, 2}) REQUIRE(t.observe(k, t0, pid, loader).matched);
    // Key 9 is epoch 0's position 9 (past the slack of 2) and epoch 1's
    // first: mid-epoch, it is held as a vote, not counted, not a new epoch.
    track::Observation stray = t.observe(9, t0, pid, loader);
    CHECK_FALSE(stray.matched);
    CHECK_FALSE(stray.new_epoch);
    CHECK(settled(t, t0).ranks[0].current->epoch == 0);
    CHECK(settled(t, t0).opens == 3);
    // The next READ fits the epoch under way: the vote is forgotten.
    track::Observation next = t.observe(3, t0, pid, loader);
    CHECK(next.matched);
    CHECK(next.epoch == 0);
    CHECK(t.observe(9, t0, pid, loader).matched == false);
    // A second READ in a row fitting the next epoch's first samples begins it.
    track::Observation begun = t.observe(8, t0, pid, loader);
    CHECK(begun.matched);
    CHECK(begun.new_epoch);
    CHECK(begun.epoch == 1);
    CHECK(begun.position == 1);
}

TEST_CASE("next_at_end: once every cursor is within slack of the end, the next epoch begins at once") {
    auto e0 = make_plan(0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, keys);
    auto e1 = make_plan(1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, keys);
    track::Tracker t({0}, {source_of({e0, e1})}, reads_options());
    t.wait_for_plans();
    // Keys 8 and 9 were never read (the kernel kept their pages).
    for (index::NodeId k : {0, 1, 2, 3, 4, 5, 6, 7}) REQUIRE(t.observe(k, t0, 5, 1).matched);
    track::Observation o = t.observe(9, t0, 5, 1);
    CHECK(o.matched);
    CHECK(o.epoch == 0); // still epoch 0's own position 9, within slack
    o = t.observe(8, t0, 5, 1);
    CHECK(o.matched);
    CHECK(o.new_epoch);
    CHECK(o.epoch == 1);
}

TEST_CASE("match_distance: how far from its worker's cursor an open would match") {
    auto e0 = make_plan(0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, keys);
    auto e1 = make_plan(1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, keys);
    track::TrackerOptions o = reads_options();
    o.slack = 4;
    track::Tracker t({0}, {source_of({e0, e1})}, o);
    t.wait_for_plans();
    REQUIRE(t.observe(0, t0, 5, 1).matched);
    CHECK(t.match_distance(1, 5, 1) == 0);
    CHECK(t.match_distance(3, 5, 1) == 2);
    CHECK(t.match_distance(5, 5, 1) == 4);
    CHECK(t.match_distance(6, 5, 1) == UINT64_MAX); // past the slack
    CHECK(t.match_distance(15, 5, 1) == UINT64_MAX); // no sample
    CHECK(t.would_match(3, 5, 1));
    CHECK_FALSE(t.would_match(6, 5, 1));
}

// Two jobs of one order (a sweep of one seed over one file): the job behind
// reads what the job ahead read and pushed from the page cache, with no
// READ, further than its slack. The engine lends it the other job's
// cursors (RangeJobs::lend_reach): its next READ matches up to the slack past
// them. Another epoch's cursors lend nothing, and a lend never reaches
// behind this job's own cursor.
TEST_CASE("lend_reach: a READ past the slack matches up to the slack past the cursors lent") {
    std::vector<index::NodeId> order;
    for (index::NodeId k = 0; k < keys; ++k) order.push_back(k);
    auto e0 = make_plan(0, order, keys);
    auto e1 = make_plan(1, order, keys);
    track::Tracker t({0}, {source_of({e0, e1})}, reads_options());
    t.wait_for_plans();
    const uint32_t pid = 100, loader = 10;
    REQUIRE(t.observe(0, t0, pid, loader).matched);
    // Key 9 is 8 past the cursor (1), beyond the slack of 2: no match.
    CHECK(t.match_distance(9, pid, loader, false) == UINT64_MAX);
    // Lent for another epoch: nothing changes.
    t.lend_reach(0, 1, {7});
    CHECK(t.match_distance(9, pid, loader, false) == UINT64_MAX);
    // The other job is at 7 in this epoch: up to 7 + 2 matches.
    t.lend_reach(0, 0, {7});
    CHECK(t.match_distance(9, pid, loader, false) != UINT64_MAX);
    CHECK(t.match_distance(10, pid, loader, false) == UINT64_MAX);
    // A lend behind the furthest one is ignored.
    t.lend_reach(0, 0, {3});
    track::Observation o = t.observe(9, t0, pid, loader);
    CHECK(o.matched);
    CHECK(o.position == 9);
    CHECK(settled(t, t0).ranks[0].cursors[0] == 10);
    // The next epoch starts without what was lent in this one.
    for (index::NodeId k = 10; k < keys; ++k) REQUIRE(t.observe(k, t0, pid, loader).matched);
    REQUIRE(t.observe(0, t0, pid, loader).new_epoch);
    CHECK(t.match_distance(9, pid, loader, false) == UINT64_MAX);
}
