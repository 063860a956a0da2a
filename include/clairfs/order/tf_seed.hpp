// SPDX-License-Identifier: MIT
// The two seeds a tf.data shuffle runs with, and the ones each of its
// iterators derives from them.
//
// Python's random_seed.get_seed(op_seed) (TF 2.21, eager): with a global
// seed G (tf.random.set_seed, or keras.utils.set_random_seed, which calls
// it) the pair is (G mod M, S mod M), M = 2^31 - 1 and mod Python's (never
// negative); an op without a seed takes S = the next draw of
// random.Random(G).randint(0, M) since set_seed. Without G: (87654321,
// S mod M) if S is given, else nondeterministic. (0, 0) becomes (0, M).
//
// With reshuffle_each_iteration the shuffle owns a RandomSeedGenerator on
// Philox(seed, seed2): iterator k (the k-th created on the dataset object,
// counting from 0) takes words 2k and 2k + 1 of that stream as its own seeds,
// so even the first epoch does not shuffle with (seed, seed2) itself.
#pragma once

#include "clairfs/order/generator.hpp"

#include <cstdint>
#include <optional>

namespace clairfs::order {

struct TfSeeds {
    uint64_t seed = 0, seed2 = 0;
    bool operator==(const TfSeeds&) const = default;
};

inline constexpr int64_t tf_max_int32 = (int64_t{1} << 31) - 1;
inline constexpr int64_t tf_default_graph_seed = 87654321;

// random.Random(g).randint(0, 2^31 - 1), draw number `draw` (0 = the first)
// after seeding, given |g| (Python seeds MT19937 by init_by_array with |g|'s
// 32-bit words; randint rejects 32-bit draws >= 2^31).
uint32_t python_randint31(uint64_t abs_g, uint64_t draw);

// A Python int seed (as parse_seed reads it) mod 2^31 - 1, Python's way.
int64_t tf_truncate_seed(const Seed& s);

// get_seed(op_seed) as above; `op_draw` is how many seedless ops asked
// before this one since set_seed (0 when it is the first). nullopt when
// neither seed is given: TF then seeds from the clock.
std::optional<TfSeeds> tf_get_seed(std::optional<Seed> global_seed, std::optional<Seed> op_seed,
                                   uint64_t op_draw = 0);

// The seeds iterator k shuffles with: words 2k and 2k + 1 of Philox(seeds)
// with reshuffling, the seeds themselves without.
TfSeeds tf_iterator_seeds(const TfSeeds& seeds, uint64_t k, bool reshuffle = true);

} // namespace clairfs::order
