// SPDX-License-Identifier: MIT
// TensorFlow's Philox4x32-10 (tensorflow/core/lib/random/philox_random.h)
// and its SingleSampleAdapter, which hands out one 32-bit word of a block
// at a time: the generator tf.data's shuffle draws from. TF seeds it with
// two 64-bit values; the first is the key, the second the counter's high
// half, so two seed pairs that differ anywhere give unrelated streams.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace clairfs::order {

class Philox4x32 {
public:
    using Block = std::array<uint32_t, 4>;

    // random::PhiloxRandom(seed_lo, seed_hi).
    Philox4x32(uint64_t seed_lo, uint64_t seed_hi)
        : key_{static_cast<uint32_t>(seed_lo), static_cast<uint32_t>(seed_lo >> 32)},
          counter_{0, 0, static_cast<uint32_t>(seed_hi), static_cast<uint32_t>(seed_hi >> 32)} {}
    // A raw key and counter, for the known-answer test.
    Philox4x32(std::array<uint32_t, 2> key, Block counter) : key_(key), counter_(counter) {}

    // The block at the current counter (ten rounds), then the counter + 1.
    Block operator()();
    // Moves the counter `blocks` blocks on, as if that many were drawn.
    void skip(uint64_t blocks);

private:
    std::array<uint32_t, 2> key_;
    Block counter_;
};

// random::SingleSampleAdapter<PhiloxRandom>: words 0, 1, 2, 3 of each block.
class PhiloxWords {
public:
    PhiloxWords(uint64_t seed_lo, uint64_t seed_hi) : gen_(seed_lo, seed_hi) {}

    uint32_t operator()() {
        if (used_ == block_.size()) {
            block_ = gen_();
            used_ = 0;
        }
        return block_[used_++];
    }

private:
    Philox4x32 gen_;
    Philox4x32::Block block_{};
    size_t used_ = 4; // the first draw computes a block
};

} // namespace clairfs::order
