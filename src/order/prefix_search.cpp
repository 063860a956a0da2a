// SPDX-License-Identifier: MIT
#include "clairfs/order/prefix_search.hpp"

#include "evidence_check.hpp"
#include "sampler_prefix.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace clairfs::order {

bool prefix_computable(uint32_t n, TorchVersion v) { return !randperm_inside_out(n, v); }

void PermPrefix::compute(uint32_t n, uint32_t k, CpuGenerator& g, std::vector<Sample>& out) {
    fisher_yates(n, k, [&g] { return g.random(); }, out);
}

void PermPrefix::compute(uint32_t n, uint32_t k, LazyMt19937& g, std::vector<Sample>& out) {
    fisher_yates(n, k, [&g] { return g(); }, out);
}

// randperm's forward Fisher-Yates, keeping only the positions a swap has
// touched: step i draws z, emits the value at i + z and moves the value at i
// there. Position i is never read again, so it is not written back.
template <class Draw>
void PermPrefix::fisher_yates(uint32_t n, uint32_t k, Draw draw, std::vector<Sample>& out) {
    uint32_t count = std::min(k, n);
    out.resize(count);
    reset(count);
    for (uint32_t i = 0; i < count; ++i) {
        if (i + 1 == n) { // the last position takes no draw
            out[i] = value_at(i);
            break;
        }
        uint32_t z = draw() % (n - i);
        if (z == 0) {
            out[i] = value_at(i);
            continue;
        }
        Sample here = value_at(i);
        Slot& there = slot(i + z);
        out[i] = live(there, i + z);
        there = Slot{i + z, here, stamp_};
    }
}

// Each step adds at most one position, so `entries` bounds the load; a
// quarter-full table rarely probes twice, which keeps the loop predictable.
void PermPrefix::reset(uint32_t entries) {
    size_t want = std::bit_ceil(std::max<size_t>(16, 4 * size_t{entries}));
    if (++stamp_ == 0 || slots_.size() < want) {
        slots_.assign(std::max(want, slots_.size()), Slot{0, 0, 0});
        stamp_ = 1;
    }
    mask_ = static_cast<uint32_t>(slots_.size() - 1);
    shift_ = 32 - static_cast<uint32_t>(std::countr_zero(slots_.size()));
}

std::optional<uint64_t> find_chain_offset(CpuGenerator chain, uint64_t max_offset, uint32_t n,
                                          bool replacement, TorchVersion v,
                                          const EpochEvidence& ev) {
    // n = 0 never passes validate(); with replacement it would divide by 0.
    if (n == 0 || (!replacement && !prefix_computable(n, v))) return std::nullopt;
    uint32_t window = replacement ? ev.window : std::min(ev.window, n);
    EvidenceCheck check(ev);
    if (!check.possible(n, window)) return std::nullopt;
    constexpr size_t lanes = 8;
    std::array<LazyMt19937, lanes> gens;
    std::array<uint32_t, lanes> seeds;
    bool draws64 = replacement && randint_draws64(n, v);
    uint32_t words = LazyMt19937::words_for(draws64 ? 2 * uint64_t{window} : window);
    PermPrefix perm;
    std::vector<Sample> order;
    // Candidates go in groups seeded together; `chain` is a copy, so drawing
    // past max_offset in the last group is harmless.
    for (uint64_t first = 0;; first += lanes) {
        for (auto& s : seeds) s = chain.random();
        LazyMt19937::seed_each(gens, seeds, words);
        for (size_t l = 0; l < lanes; ++l) {
            sampler_prefix(n, window, replacement, draws64, gens[l], perm, order);
            if (check.all_in(order)) return first + l;
            if (first + l == max_offset) return std::nullopt;
        }
    }
}

namespace {

// Where rank's first `window` samples sit in the epoch's permutation.
std::vector<uint32_t> rank_positions(const JobSpec& s, uint32_t n, uint32_t window) {
    uint64_t world = s.world_size;
    uint64_t per_rank = s.sampler_drop_last ? n / world : (n + world - 1) / world;
    std::vector<uint32_t> positions(std::min<uint64_t>(window, per_rank));
    for (size_t i = 0; i < positions.size(); ++i)
        positions[i] = static_cast<uint32_t>((s.rank + world * i) % n);
    return positions;
}

void gather(const std::vector<Sample>& perm, const std::vector<uint32_t>& positions,
            std::vector<Sample>& out) {
    out.resize(positions.size());
    for (size_t i = 0; i < positions.size(); ++i) out[i] = perm[positions[i]];
}

// shuffle=false: the identity whatever E is.
std::optional<uint64_t> unshuffled_epoch(const std::vector<uint32_t>& positions,
                                         std::span<const uint64_t> candidates,
                                         EvidenceCheck& check) {
    std::vector<Sample> order(positions.begin(), positions.end());
    if (candidates.empty() || !check.all_in(order)) return std::nullopt;
    return candidates.front();
}

} // namespace

std::optional<uint64_t> find_distributed_epoch(const JobSpec& spec, uint32_t n,
                                               std::span<const uint64_t> candidates,
                                               const EpochEvidence& ev) {
    if (n == 0 || !prefix_computable(n, spec.torch_version)) return std::nullopt;
    std::vector<uint32_t> positions = rank_positions(spec, n, ev.window);
    EvidenceCheck check(ev);
    if (!check.possible(n, positions.size())) return std::nullopt;
    if (!spec.shuffle) return unshuffled_epoch(positions, candidates, check);
    uint32_t k = positions.empty() ? 0 : *std::max_element(positions.begin(), positions.end()) + 1;
    PermPrefix prefix;
    LazyMt19937 g;
    std::vector<Sample> perm, order;
    for (uint64_t e : candidates) {
        g.seed(static_cast<uint32_t>(spec.seed + e)); // manual_seed(seed + epoch)
        prefix.compute(n, k, g, perm);
        gather(perm, positions, order);
        if (check.all_in(order)) return e;
    }
    return std::nullopt;
}

} // namespace clairfs::order
