// SPDX-License-Identifier: MIT
// Which sample a READ stands for (prefetch/chunks/range_follow.hpp), against a
// real tracker over hand-built plans whose positions are sample numbers.
#include "prefetch/chunks/range_follow.hpp"
#include "tracker_plans.hpp"

using namespace clairfs;
using namespace clairfs::test;

namespace {

constexpr index::NodeId packed_file = 7;

// Eight samples in one file, not in sample order, after a 4 KiB header:
// sample s lies at where[s], 6000 bytes each except sample 5 (100 bytes,
// sharing its first page with sample 2's start).
layout::Dataset dataset() {
    layout::Dataset d;
    const uint64_t where[8] = {4096, 40960, 20480, 61440, 12288, 20580, 32768, 53248};
    for (uint32_t s = 0; s < 8; ++s) {
        d.samples.push_back({0, packed_file});
        d.ranges.push_back({where[s], s == 5 ? 100U : 6000U, packed_file});
    }
    return d;
}

track::TrackerOptions options() {
    track::TrackerOptions o;
    o.layout = {1, 0};
    o.slack = 4;
    o.next_at_end = true;
    o.min_opens = 1000;
    return o;
}

} // namespace

TEST_CASE("overlapping lists the samples a byte span touches, in offset order") {
    layout::Dataset d = dataset();
    prefetch::RangeFollow rf(d);
    CHECK(rf.covers(packed_file));
    CHECK_FALSE(rf.covers(packed_file + 1));
    uint32_t out[8];
    REQUIRE(rf.overlapping(packed_file, 20000, 700, out, 8) == 2);
    CHECK(out[0] == 2);
    CHECK(out[1] == 5);
    CHECK(rf.overlapping(packed_file, 0, 4096, out, 8) == 0);     // the header
    CHECK(rf.overlapping(packed_file, 10096, 2000, out, 8) == 0); // a gap
    REQUIRE(rf.overlapping(packed_file, 10000, 100000, out, 3) == 3); // capped
    CHECK(out[0] == 0); // [4096, 10096) ends inside the span
    CHECK(out[1] == 4);
    CHECK(out[2] == 2);
}

TEST_CASE("a READ stands for the sample beginning in its first page, once") {
    layout::Dataset d = dataset();
    prefetch::RangeFollow rf(d);
    // The epoch reads samples 0..7 in order.
    auto e0 = make_plan(0, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
    track::Tracker t({0}, {source_of({e0})}, options());
    const uint32_t pid = 42, loader = 40;

    // The file's first page is its header: never a sample, though sample
    // 0's range would overlap a 16 KiB READ from there.
    CHECK_FALSE(rf.observe(t, packed_file, 0, 16384, pid, loader).matched);
    CHECK(t.snapshot(t0).opens == 0);
    // Sample 0 begins in page 4096: told and matched.
    track::Observation o = rf.observe(t, packed_file, 4096, 4096, pid, loader);
    CHECK(o.matched);
    CHECK(o.position == 0);
    // Its next page continues the READ before: nothing told.
    CHECK_FALSE(rf.observe(t, packed_file, 8192, 4096, pid, loader).matched);
    CHECK(t.snapshot(t0).opens == 1);
    // Its first page again (the kernel dropped and refetched it): the
    // process's last sample, not told again.
    CHECK_FALSE(rf.observe(t, packed_file, 4096, 4096, pid, loader).matched);
    CHECK(t.snapshot(t0).opens == 1);
    // A READ of sample 1's middle (its first page kept by the kernel)
    // begins no sample: nothing told.
    CHECK_FALSE(rf.observe(t, packed_file, 45056, 4096, pid, loader).matched);
    CHECK(t.snapshot(t0).opens == 1);
    // Samples 2 and 5 begin in page 20480; 2 is next for the worker.
    o = rf.observe(t, packed_file, 20480, 4096, pid, loader);
    CHECK(o.matched);
    CHECK(o.position == 2);
}

TEST_CASE("of two samples beginning in a READ's first page, the one nearest its cursor") {
    layout::Dataset d = dataset();
    prefetch::RangeFollow rf(d);
    // Sample 5 is due before sample 2 this time.
    auto e0 = make_plan(0, {0, 5, 3, 2, 1, 4, 6, 7}, 8);
    track::Tracker t({0}, {source_of({e0})}, options());
    REQUIRE(rf.observe(t, packed_file, 4096, 4096, 1, 1).matched);
    track::Observation o = rf.observe(t, packed_file, 20480, 8192, 1, 1);
    CHECK(o.matched);
    CHECK(o.position == 1); // sample 5, not sample 2 at position 3
    CHECK(t.snapshot(t0).opens == 2);
}

TEST_CASE("fit says how near a READ lands, changing nothing; note marks its end") {
    layout::Dataset d = dataset();
    prefetch::RangeFollow rf(d);
    auto e0 = make_plan(0, {0, 1, 2, 3, 4, 5, 6, 7}, 8);
    track::Tracker t({0}, {source_of({e0})}, options());
    // Sample 0 is next: distance 0; asking twice moves nothing.
    CHECK(rf.fit(t, packed_file, 4096, 4096, 1, 1) == 0);
    CHECK(rf.fit(t, packed_file, 4096, 4096, 1, 1) == 0);
    CHECK(t.snapshot(t0).opens == 0);
    // The header, and a page where no sample begins: no fit.
    CHECK(rf.fit(t, packed_file, 0, 4096, 1, 1) == UINT64_MAX);
    CHECK(rf.fit(t, packed_file, 45056, 4096, 1, 1) == UINT64_MAX);
    // Sample 3 (position 3) is three ahead of the cursor.
    CHECK(rf.fit(t, packed_file, 61440, 4096, 1, 1) == 3);
    // Sample 4 begins at 12288; a READ told to another loader that ended
    // there makes a READ from there a continuation, here too.
    CHECK(rf.fit(t, packed_file, 12288, 4096, 1, 1) == 4);
    rf.note(packed_file, 8192, 4096);
    CHECK(rf.fit(t, packed_file, 12288, 4096, 1, 1) == UINT64_MAX);
    // And the READ that fits is still told as before.
    track::Observation o = rf.observe(t, packed_file, 4096, 4096, 1, 1);
    CHECK(o.matched);
    CHECK(o.position == 0);
}
