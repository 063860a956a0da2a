// SPDX-License-Identifier: MIT
// place_entries: a replayed journal is checksummed, not trusted. Each kind
// of impossible record (an extent misaligned, past the end, overlapping,
// wrapping 2^64, a sequence number at 2^64-1) is dropped or neutralised.
#include "cache/journal_placement.hpp"

#include <doctest/doctest.h>

using namespace clairfs::cache;

namespace {

constexpr uint64_t block = ExtentAllocator::alignment;

std::pair<clairfs::index::NodeId, JournalRecord> entry(uint32_t id, uint64_t seq, uint64_t offset,
                                                       uint64_t size) {
    JournalRecord r;
    r.seq = seq;
    r.offset = offset;
    r.size = size;
    return {id, r};
}

} // namespace

TEST_CASE("where two puts share an extent, the later one is kept") {
    ExtentAllocator extents(16 * block);
    JournalEntries e = {entry(1, 5, 0, 100), entry(2, 9, 0, 3 * block), entry(3, 7, 4 * block, 1)};
    CHECK(place_entries(e, extents) == 1);
    REQUIRE(e.size() == 2);
    CHECK(e[0].first == 3); // oldest first, as a journal lists them
    CHECK(e[1].first == 2);
    CHECK(extents.used_bytes() == 4 * block);
}

TEST_CASE("extents misaligned, past the end or wrapping 2^64 are dropped") {
    ExtentAllocator extents(16 * block);
    JournalEntries e = {entry(1, 1, 100, 10), entry(2, 2, 15 * block, 2 * block),
                        entry(3, 3, 64 * block, 1), entry(4, 4, 0, UINT64_MAX),
                        entry(5, 5, UINT64_MAX & ~(block - 1), block)};
    CHECK(place_entries(e, extents) == 5);
    CHECK(e.empty());
    CHECK(extents.used_bytes() == 0);
}

TEST_CASE("an empty file keeps no offset, and sequence numbers restart at 1") {
    ExtentAllocator extents(16 * block);
    JournalEntries e = {entry(1, UINT64_MAX, 12345, 0), entry(2, UINT64_MAX - 1, block, 10)};
    CHECK(place_entries(e, extents) == 0);
    REQUIRE(e.size() == 2);
    CHECK(e[0].first == 2);
    CHECK(e[0].second.seq == 1);
    CHECK(e[1].second.offset == 0);
    CHECK(e[1].second.seq == 2);
}
