// SPDX-License-Identifier: MIT
// Checking a candidate order against an epoch's evidence: shared by the
// torch seed searches (prefix_search.cpp) and the tf.data iterator search.
#pragma once

#include "clairfs/order/prefix_search.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

namespace clairfs::order {

// The evidence, sorted for lookups, and which of it the candidate being
// checked has shown so far (a stamp per sample, so no clearing per candidate).
class EvidenceCheck {
public:
    explicit EvidenceCheck(const EpochEvidence& ev) : sorted_(ev.samples) {
        std::sort(sorted_.begin(), sorted_.end());
        sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
        seen_.assign(sorted_.size(), 0);
        for (Sample s : sorted_) filter_[bit(s) / 64] |= uint64_t{1} << (bit(s) % 64);
    }

    // Whether some order of n samples could put all of it in `window` positions.
    bool possible(uint32_t n, uint64_t window) const {
        return sorted_.size() <= window && (sorted_.empty() || sorted_.back() < n);
    }

    // Whether `s` is one of the evidence samples (ChainScan's first-draw test).
    bool contains(Sample s) const {
        return maybe(s) && std::binary_search(sorted_.begin(), sorted_.end(), s);
    }

    bool all_in(std::span<const Sample> order) {
        ++stamp_;
        size_t found = 0;
        for (Sample s : order)
            if (maybe(s) && mark(s) && ++found == sorted_.size()) return true;
        return sorted_.empty();
    }

private:
    // Nearly every sample a candidate shows is not evidence: one bit test
    // turns almost all of them away before a branchy binary search.
    static uint32_t bit(Sample s) { return (s * 0x9e3779b1u) >> (32 - filter_bits_log2); }
    bool maybe(Sample s) const { return (filter_[bit(s) / 64] >> (bit(s) % 64)) & 1; }

    // True the first time `s` is an evidence sample for this candidate.
    bool mark(Sample s) {
        auto it = std::lower_bound(sorted_.begin(), sorted_.end(), s);
        if (it == sorted_.end() || *it != s) return false;
        uint64_t& seen = seen_[static_cast<size_t>(it - sorted_.begin())];
        if (seen == stamp_) return false;
        seen = stamp_;
        return true;
    }

    static constexpr uint32_t filter_bits_log2 = 12;
    std::array<uint64_t, (1u << filter_bits_log2) / 64> filter_{};
    std::vector<Sample> sorted_;
    std::vector<uint64_t> seen_;
    uint64_t stamp_ = 0;
};

} // namespace clairfs::order
