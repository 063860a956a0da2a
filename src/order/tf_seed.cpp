// SPDX-License-Identifier: MIT
#include "clairfs/order/tf_seed.hpp"

#include "clairfs/order/philox.hpp"

#include <array>
#include <random>
#include <sstream>

namespace clairfs::order {
namespace {

// MT19937's init_by_array (the reference implementation's, which CPython's
// random.seed uses), loaded into std::mt19937 through its text form: the
// 624 state words, the next draw twisting them.
std::mt19937 init_by_array(const uint32_t* key, size_t len) {
    constexpr size_t n = 624;
    std::array<uint32_t, n> mt;
    mt[0] = 19650218u;
    for (size_t i = 1; i < n; ++i)
        mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + static_cast<uint32_t>(i);
    size_t i = 1, j = 0;
    for (size_t k = n > len ? n : len; k; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] +
                static_cast<uint32_t>(j);
        if (++i >= n) {
            mt[0] = mt[n - 1];
            i = 1;
        }
        if (++j >= len) j = 0;
    }
    for (size_t k = n - 1; k; --k) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) -
                static_cast<uint32_t>(i);
        if (++i >= n) {
            mt[0] = mt[n - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;
    std::stringstream text;
    for (uint32_t w : mt) text << w << ' ';
    std::mt19937 out;
    text >> out;
    return out;
}

} // namespace

int64_t tf_truncate_seed(const Seed& s) {
    if (!s.negative) return static_cast<int64_t>(s.value % static_cast<uint64_t>(tf_max_int32));
    int64_t r = static_cast<int64_t>(s.value) % tf_max_int32;
    return r < 0 ? r + tf_max_int32 : r; // Python's % takes the divisor's sign
}

uint32_t python_randint31(uint64_t mag, uint64_t draw) {
    std::array<uint32_t, 2> key = {static_cast<uint32_t>(mag), static_cast<uint32_t>(mag >> 32)};
    std::mt19937 mt = init_by_array(key.data(), key[1] ? 2 : 1);
    for (uint64_t d = 0;; ++d) {
        uint32_t v;
        while ((v = static_cast<uint32_t>(mt())) >= 0x80000000u) {
        }
        if (d == draw) return v;
    }
}

std::optional<TfSeeds> tf_get_seed(std::optional<Seed> global_seed, std::optional<Seed> op_seed,
                                   uint64_t op_draw) {
    TfSeeds s;
    if (global_seed) {
        const Seed& g = *global_seed;
        uint64_t abs_g = g.negative ? ~g.value + 1 : g.value;
        Seed op = op_seed ? *op_seed : Seed{python_randint31(abs_g, op_draw), false};
        s = {static_cast<uint64_t>(tf_truncate_seed(g)), static_cast<uint64_t>(tf_truncate_seed(op))};
    } else if (op_seed) {
        s = {static_cast<uint64_t>(tf_default_graph_seed),
             static_cast<uint64_t>(tf_truncate_seed(*op_seed))};
    } else {
        return std::nullopt;
    }
    if (s.seed == 0 && s.seed2 == 0) s.seed2 = static_cast<uint64_t>(tf_max_int32);
    return s;
}

TfSeeds tf_iterator_seeds(const TfSeeds& seeds, uint64_t k, bool reshuffle) {
    if (!reshuffle) return seeds;
    // Words 2k and 2k + 1 are half of block k / 2.
    Philox4x32 gen(seeds.seed, seeds.seed2);
    gen.skip(k / 2);
    Philox4x32::Block b = gen();
    size_t first = 2 * (k % 2);
    return {b[first], b[first + 1]};
}

} // namespace clairfs::order
