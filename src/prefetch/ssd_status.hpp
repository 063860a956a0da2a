// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/cache/tier.hpp"

#include <nlohmann/json.hpp>

namespace clairfs::prefetch {

// The status keys an SSD tier shows alike for whole files (status "ssd")
// and for chunks ("chunks.ssd"): enabled, error, bytes, capacity, hits,
// errors, reused, invalidated, and its entries under `entries` ("files",
// "chunks").
nlohmann::json ssd_tier_status(const cache::Tier& ssd, const char* entries);

} // namespace clairfs::prefetch
