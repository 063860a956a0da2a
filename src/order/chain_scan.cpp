// SPDX-License-Identifier: MIT
#include "clairfs/order/chain_scan.hpp"

#include "evidence_check.hpp"
#include "fast_mod.hpp"
#include "sampler_prefix.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace clairfs::order {
namespace {

// 16 lanes of 32 bits: one AVX-512 register, two AVX2 ones, four SSE2 ones;
// the compiler lowers the same code for each clone below.
using Lanes = uint32_t __attribute__((vector_size(64)));
constexpr size_t lanes = 16;
// Groups of lanes advanced in step, so one multiplication's latency is
// hidden behind the others'.
constexpr size_t groups = 8;
constexpr size_t block = lanes * groups;

constexpr uint32_t upper = 0x80000000u, lower = 0x7fffffffu, matrix = 0x9908b0dfu;

} // namespace

// Seeding is x[j] = 1812433253 * (x[j-1] ^ (x[j-1] >> 30)) + j; output i of
// the first block twists words i, i+1 and i+397, then tempers.
[[gnu::target_clones("avx512f", "avx2", "default")]] void
mt19937_first_draws(const uint32_t* seeds, size_t count, uint32_t* out0, uint32_t* out1) {
    for (size_t b = 0; b < count; b += block) {
        size_t here = std::min(block, count - b);
        uint32_t in[block] = {};
        std::memcpy(in, seeds + b, here * sizeof(uint32_t));
        Lanes x[groups], w0[groups], w1[groups], w2[groups], w397[groups];
        for (size_t g = 0; g < groups; ++g) {
            std::memcpy(&x[g], in + g * lanes, sizeof(Lanes));
            w0[g] = x[g];
        }
        for (uint32_t j = 1; j <= 398; ++j) {
            for (size_t g = 0; g < groups; ++g) x[g] = 1812433253u * (x[g] ^ (x[g] >> 30)) + j;
            if (j == 1)
                std::copy(x, x + groups, w1);
            else if (j == 2)
                std::copy(x, x + groups, w2);
            else if (j == 397)
                std::copy(x, x + groups, w397);
        }
        uint32_t d0[block], d1[block];
        for (size_t g = 0; g < groups; ++g) {
            // Draw 0 from words 0, 1, 397; draw 1 from words 1, 2, 398 (x now).
            Lanes y = (w0[g] & upper) | (w1[g] & lower);
            Lanes t = w397[g] ^ (y >> 1) ^ ((-(y & 1u)) & matrix);
            Lanes y1 = (w1[g] & upper) | (w2[g] & lower);
            Lanes t1 = x[g] ^ (y1 >> 1) ^ ((-(y1 & 1u)) & matrix);
            for (Lanes* v : {&t, &t1}) {
                *v ^= *v >> 11;
                *v ^= (*v << 7) & 0x9d2c5680u;
                *v ^= (*v << 15) & 0xefc60000u;
                *v ^= *v >> 18;
            }
            std::memcpy(d0 + g * lanes, &t, sizeof(Lanes));
            std::memcpy(d1 + g * lanes, &t1, sizeof(Lanes));
        }
        std::memcpy(out0 + b, d0, here * sizeof(uint32_t));
        if (out1) std::memcpy(out1 + b, d1, here * sizeof(uint32_t));
    }
}

struct ChainScan::State {
    // Whether each opener's samples come in the order it opened them within a
    // candidate's first positions (a DataLoader worker opens its samples one
    // after the other). Only samples the candidate shows are placed; all_in
    // has already checked that every one is there.
    class OrderCheck {
    public:
        explicit OrderCheck(const EpochEvidence& ev) : samples_(ev.samples), streams_(ev.streams) {
            if (streams_.size() != samples_.size()) streams_.clear();
            for (size_t i = 0; i < samples_.size(); ++i) where_.emplace(samples_[i], 0);
        }

        bool holds(const std::vector<Sample>& order) {
            if (streams_.empty()) return true;
            for (auto& [s, p] : where_) p = UINT64_MAX;
            for (size_t i = 0; i < order.size(); ++i)
                if (auto it = where_.find(order[i]); it != where_.end() && it->second == UINT64_MAX)
                    it->second = i;
            last_.clear();
            for (size_t i = 0; i < samples_.size(); ++i) {
                uint64_t p = where_[samples_[i]];
                auto [it, fresh] = last_.emplace(streams_[i], p);
                if (!fresh && p <= it->second) return false;
                it->second = p;
            }
            return true;
        }

    private:
        std::vector<Sample> samples_;
        std::vector<uint32_t> streams_;
        std::unordered_map<Sample, uint64_t> where_; // sample -> its first position
        std::unordered_map<uint32_t, uint64_t> last_; // opener -> its last sample's position
    };

    State(uint32_t n, bool replacement, TorchVersion v, const EpochEvidence& ev)
        : n(n), replacement(replacement), draws64(replacement && randint_draws64(n, v)),
          window(replacement ? ev.window : std::min(ev.window, n)), mod(n), check(ev),
          order_check(ev) {}

    // The sample at position 0 of a candidate whose first draws are d0, d1.
    Sample first_sample(uint32_t d0, uint32_t d1) const {
        if (draws64) return static_cast<Sample>(((uint64_t{d0} << 32) | d1) % n);
        return mod(d0);
    }

    bool fits(uint32_t seed_word) {
        LazyMt19937 g(seed_word);
        sampler_prefix(n, window, replacement, draws64, g, perm, order);
        return check.all_in(order) && (replacement || order_check.holds(order));
    }

    uint32_t n;
    bool replacement, draws64;
    uint32_t window;
    FastMod mod;
    EvidenceCheck check;
    OrderCheck order_check;
    PermPrefix perm;
    std::vector<Sample> order;
    // One batch of candidates: their seed words and first draws.
    static constexpr size_t batch = 4096;
    std::vector<uint32_t> seeds = std::vector<uint32_t>(batch);
    std::vector<uint32_t> d0 = std::vector<uint32_t>(batch), d1 = std::vector<uint32_t>(batch);
};

ChainScan::ChainScan(CpuGenerator chain, uint64_t first, uint64_t last, uint32_t n,
                     bool replacement, TorchVersion v, const EpochEvidence& ev)
    : chain_(chain), next_(first), last_(last) {
    // n = 0 never passes validate(); with replacement it would divide by 0.
    possible_ = n > 0 && (replacement || prefix_computable(n, v)) && !ev.samples.empty();
    if (!possible_) return;
    s_ = std::make_unique<State>(n, replacement, v, ev);
    possible_ = s_->check.possible(n, s_->window);
}

ChainScan::~ChainScan() = default;

std::optional<uint64_t> ChainScan::step(uint64_t count) {
    if (!possible_) {
        next_ = last_ + 1;
        return std::nullopt;
    }
    State& s = *s_;
    uint64_t end = std::min(last_ + 1, next_ + count);
    while (!done() && next_ < end) {
        size_t here = static_cast<size_t>(std::min<uint64_t>(State::batch, end - next_));
        for (size_t i = 0; i < here; ++i) s.seeds[i] = chain_.random();
        mt19937_first_draws(s.seeds.data(), here, s.d0.data(), s.draws64 ? s.d1.data() : nullptr);
        for (size_t i = 0; i < here; ++i) {
            if (!s.check.contains(s.first_sample(s.d0[i], s.d1[i]))) continue;
            ++full_checks_;
            if (!s.fits(s.seeds[i])) continue;
            found_ = true;
            uint64_t at = next_ + i;
            // The words after it are not scanned: the chain stays where it
            // was, which no caller reads again.
            next_ = at + 1;
            return at;
        }
        next_ += here;
    }
    return std::nullopt;
}

double chain_false_accept(uint32_t n, uint64_t window, size_t m, uint32_t streams) {
    double p = 1;
    for (size_t i = 0; i < m; ++i) {
        if (window <= i) return 0; // more evidence than positions: nothing fits
        p *= std::min(1.0, static_cast<double>(window - i) / static_cast<double>(n - std::min<uint64_t>(i, n - 1)));
    }
    streams = std::max(streams, 1u);
    size_t each = m / streams;
    for (uint32_t s = 0; s < streams; ++s) {
        size_t k = each + (s < m % streams ? 1 : 0);
        for (size_t i = 2; i <= k; ++i) p /= static_cast<double>(i);
    }
    return p;
}

} // namespace clairfs::order
