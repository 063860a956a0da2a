// SPDX-License-Identifier: MIT
#include "ssd_status.hpp"

namespace clairfs::prefetch {

nlohmann::json ssd_tier_status(const cache::Tier& ssd, const char* entries,
                               const SsdWriter* writer) {
    cache::TierStats t = ssd.stats();
    cache::TierHealth h = ssd.health();
    SsdWriterStats w = writer ? writer->stats() : SsdWriterStats{};
    return {{"enabled", h.enabled},
            {"error", h.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(h.error)},
            {"bytes", t.bytes},
            {"capacity", t.capacity},
            {entries, t.entries},
            {"hits", t.hits},
            {"errors", h.errors},
            {"reused", h.reused},
            {"invalidated", h.invalidated},
            {"written", w.written},
            {"refused", w.refused},
            {"skipped", w.skipped},
            {"pending_bytes", w.pending_bytes}};
}

} // namespace clairfs::prefetch
