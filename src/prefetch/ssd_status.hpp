// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/cache/tier.hpp"
#include "ssd_writer.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

// The status keys an SSD tier shows alike for whole files (status "ssd")
// and for chunks ("chunks.ssd"): enabled, error, bytes, capacity, hits,
// errors, reused, invalidated, its entries under `entries` ("files",
// "chunks"), and its writer's written, refused, skipped and pending_bytes
// (all 0 without a writer): a write skipped or refused is a fetch from the
// backing store again next epoch, so both tiers must show them.
nlohmann::json ssd_tier_status(const cache::Tier& ssd, const char* entries,
                               const SsdWriter* writer);

} // namespace clairfs::prefetch
