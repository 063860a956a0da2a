// SPDX-License-Identifier: MIT
// Which entries of a replayed journal the SSD tier takes back. Records are
// checksummed, not trusted: one a crash left stale, or a journal edited by
// hand, may name an extent that is misaligned, past the end of the cache
// file, or another entry's. Each kept entry owns its extent, alone.
#pragma once

#include "cache_journal.hpp"
#include "clairfs/index/node.hpp"
#include "extent_allocator.hpp"

#include <cstdint>
#include <utility>
#include <vector>

namespace clairfs::cache {

using JournalEntries = std::vector<std::pair<index::NodeId, JournalRecord>>;

// Reserves each entry's extent in `extents`, newest (highest seq) first:
// where a crash left two puts on one extent, the later put's bytes are
// there. Entries whose extent cannot be reserved are removed; the others
// stay, oldest first, as a journal lists them, renumbered 1..n so that no
// sequence number from the file (2^64-1 would wrap the next one) lives on.
// Returns how many were removed.
uint64_t place_entries(JournalEntries& entries, ExtentAllocator& extents);

} // namespace clairfs::cache
