// SPDX-License-Identifier: MIT
// The two draws Keras makes from numpy's legacy RandomState: the shuffle of
// the file list in image_dataset_from_directory, and the seed it picks
// itself when given seed=None. RandomState(seed) for 0 <= seed < 2^32 is
// MT19937 with the standard init_genrand, which is std::mt19937(seed).
#pragma once

#include "clairfs/order/randperm.hpp"

#include <cstdint>
#include <random>
#include <span>

namespace clairfs::order {

// numpy's random_interval(max): a value in [0, max], drawn by masking to the
// smallest 2^k - 1 >= max and rejecting values above max. 32-bit draws while
// max fits 32 bits, else 64-bit draws (high word first).
uint64_t numpy_random_interval(std::mt19937& mt, uint64_t max);

// np.random.RandomState(seed).shuffle(x) for a list: for i = n-1 down to 1,
// swap x[i] with x[random_interval(i)].
void numpy_shuffle(uint32_t seed, std::span<Sample> x);

// np.random.RandomState(seed).randint(high) with 1 <= high <= 2^32: the first
// value, which is what keras draws as `np.random.randint(1e6)` right after
// keras.utils.set_random_seed(seed) (that calls np.random.seed(seed)).
uint32_t numpy_randint(uint32_t seed, uint64_t high);

} // namespace clairfs::order
