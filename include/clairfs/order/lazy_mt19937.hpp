// SPDX-License-Identifier: MIT
// std::mt19937 for searches that seed thousands of generators and read only a
// few dozen draws from each. Seeding fills 624 words one after another and the
// first draw twists all 624; but output i of the first block needs only words
// i, i+1 and i+397 (for i < 227), so this generator seeds words only as far as
// the draws so far need them and twists one word per draw. The words it
// computes are the ones std::mt19937 computes, in the same order, so every
// output is identical to it, also past the first block.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace clairfs::order {

class LazyMt19937 {
public:
    explicit LazyMt19937(uint32_t s = 5489u) { seed(s); } // std::mt19937's default seed

    // std::mt19937(s): nothing is computed until the first draw.
    void seed(uint32_t s) {
        x_[0] = s;
        seeded_ = 1;
        next_ = 0;
    }

    // seed(seeds[l]) for every gens[l], also filling the first `words` state
    // words (at most 624): draw i < 227 needs words up to i + 397. Seeding is
    // one long chain of dependent multiplications per generator; advancing
    // several chains in step lets the CPU overlap them.
    template <size_t L>
    static void seed_each(std::array<LazyMt19937, L>& gens, const std::array<uint32_t, L>& seeds,
                          uint32_t words) {
        std::array<uint32_t, L> word = seeds;
        for (size_t l = 0; l < L; ++l) gens[l].seed(seeds[l]);
        for (uint32_t j = 1; j < words; ++j)
            for (size_t l = 0; l < L; ++l) {
                word[l] = 1812433253u * (word[l] ^ (word[l] >> 30)) + j;
                gens[l].x_[j] = word[l];
            }
        for (auto& g : gens) g.seeded_ = words > 1 ? words : 1;
    }

    // How many state words the first `draws` draws read.
    static constexpr uint32_t words_for(uint64_t draws) {
        return draws + far < size ? static_cast<uint32_t>(draws + far) : size;
    }

    uint32_t operator()() {
        uint32_t i = next_;
        // Word i + 397 is read before it is twisted only in the first block.
        if (seeded_ < size) seed_until(i + far < size ? i + far + 1 : size);
        uint32_t near = i + 1 == size ? 0 : i + 1;
        uint32_t y = (x_[i] & 0x80000000u) | (x_[near] & 0x7fffffffu);
        x_[i] = x_[i + far < size ? i + far : i + far - size] ^ (y >> 1) ^
                ((y & 1u) ? 0x9908b0dfu : 0u);
        next_ = near;
        return temper(x_[i]);
    }

private:
    static constexpr uint32_t size = 624;
    static constexpr uint32_t far = 397;

    void seed_until(uint32_t end) {
        for (uint32_t j = seeded_; j < end; ++j)
            x_[j] = 1812433253u * (x_[j - 1] ^ (x_[j - 1] >> 30)) + j;
        seeded_ = end > seeded_ ? end : seeded_;
    }

    static uint32_t temper(uint32_t y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        return y ^ (y >> 18);
    }

    std::array<uint32_t, size> x_;
    uint32_t seeded_ = 0; // words [0, seeded_) hold their seeded (or twisted) value
    uint32_t next_ = 0;   // the word the next draw twists and returns
};

} // namespace clairfs::order
