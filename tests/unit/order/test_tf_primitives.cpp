// SPDX-License-Identifier: MIT
// The pieces of TensorFlow/Keras's order, each against a known answer:
// Philox's published test vectors, numpy and CPython outputs computed with
// numpy 2.4.6 / Python 3.11, and tf.data's own kernel test
// (shuffle_dataset_op_test.cc) for the seeds and the buffer together.
#include "clairfs/order/numpy_random.hpp"
#include "clairfs/order/philox.hpp"
#include "clairfs/order/tf_seed.hpp"
#include "clairfs/order/tf_shuffle.hpp"

#include <doctest/doctest.h>
#include <numeric>

using namespace clairfs::order;

namespace {

std::vector<Sample> iota(uint32_t n) {
    std::vector<Sample> v(n);
    std::iota(v.begin(), v.end(), Sample{0});
    return v;
}

// Iterator k of range(n).shuffle(buffer) on op seeds (seed, seed2).
std::vector<Sample> kernel_order(uint32_t n, uint64_t buffer, TfSeeds seeds, uint64_t k,
                                 bool reshuffle) {
    TfShuffle sh;
    std::vector<Sample> out;
    sh.run(iota(n), buffer, tf_iterator_seeds(seeds, k, reshuffle), n, out);
    return out;
}

Seed py(int64_t v) {
    return {static_cast<uint64_t>(v), v < 0};
}

} // namespace

TEST_CASE("Philox4x32-10 gives Random123's known answers") {
    using B = Philox4x32::Block;
    CHECK(Philox4x32({0, 0}, B{0, 0, 0, 0})() == B{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
    CHECK(Philox4x32({0xffffffff, 0xffffffff}, B{0xffffffff, 0xffffffff, 0xffffffff,
                                                  0xffffffff})() ==
          B{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
    CHECK(Philox4x32({0xa4093822, 0x299f31d0}, B{0x243f6a88, 0x85a308d3, 0x13198a2e,
                                                  0x03707344})() ==
          B{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("PhiloxRandom(seed_lo, seed_hi): key from seed_lo, counter's high half from seed_hi") {
    uint64_t lo = 0x0123456789abcdefull, hi = 0xfedcba9876543210ull;
    Philox4x32 seeded(lo, hi);
    Philox4x32 raw({0x89abcdef, 0x01234567}, {0, 0, 0x76543210, 0xfedcba98});
    CHECK(seeded() == raw());
    CHECK(seeded() == raw()); // the counter moves on the same way
}

TEST_CASE("the single-sample adapter hands out a block's words in order, then the next block") {
    Philox4x32 blocks(5, 9);
    PhiloxWords words(5, 9);
    for (int b = 0; b < 3; ++b)
        for (uint32_t w : blocks()) CHECK(words() == w);
}

TEST_CASE("skipping blocks is drawing them, carries included") {
    Philox4x32 a({1, 2}, {0xfffffffe, 0xffffffff, 0xffffffff, 0}), b = a;
    for (int i = 0; i < 5; ++i) a();
    b.skip(5);
    CHECK(a() == b());
}

TEST_CASE("numpy RandomState(seed).shuffle of a list") {
    auto shuffled = [](uint32_t seed, uint32_t n) {
        auto v = iota(n);
        numpy_shuffle(seed, v);
        return v;
    };
    CHECK(shuffled(42, 10) == std::vector<Sample>{8, 1, 5, 0, 7, 2, 9, 4, 3, 6});
    CHECK(shuffled(0, 10) == std::vector<Sample>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5});
    CHECK(shuffled(123456, 10) == std::vector<Sample>{8, 7, 6, 4, 5, 3, 0, 9, 2, 1});
    CHECK(shuffled(4294967295u, 10) == std::vector<Sample>{6, 9, 5, 1, 8, 0, 7, 4, 2, 3});
    auto big = shuffled(7, 1000);
    CHECK(std::vector<Sample>(big.begin(), big.begin() + 5) ==
          std::vector<Sample>{778, 334, 271, 802, 216});
    CHECK(std::vector<Sample>(big.end() - 5, big.end()) ==
          std::vector<Sample>{579, 502, 537, 196, 175});
    CHECK(shuffled(3, 1) == std::vector<Sample>{0});
}

TEST_CASE("numpy's random_interval masks, rejects, and takes 64-bit draws above 2^32 - 1") {
    std::mt19937 a(11), b(11);
    CHECK(numpy_random_interval(a, 0) == 0);
    for (int i = 0; i < 100; ++i) {
        uint64_t v = numpy_random_interval(a, 5);
        uint64_t w;
        while ((w = b() & 7u) > 5) {
        }
        CHECK(v == w);
    }
    std::mt19937 c(3), d(3);
    uint64_t max = (uint64_t{1} << 33) + 5; // mask 2^34 - 1
    uint64_t v = numpy_random_interval(c, max), w;
    do {
        uint64_t hi = d();
        w = ((hi << 32) | d()) & ((uint64_t{1} << 34) - 1);
    } while (w > max);
    CHECK(v == w);
}

TEST_CASE("numpy RandomState(seed).randint(1e6)") {
    CHECK(numpy_randint(0, 1000000) == 985772);
    CHECK(numpy_randint(1, 1000000) == 128037);
    CHECK(numpy_randint(42, 1000000) == 121958);
    CHECK(numpy_randint(12345, 1000000) == 741858);
    CHECK(numpy_randint(4294967295u, 1000000) == 944547);
}

TEST_CASE("CPython random.Random(g).randint(0, 2**31 - 1)") {
    CHECK(python_randint31(0, 0) == 1654615998u);
    CHECK(python_randint31(0, 2) == 173879092u);
    CHECK(python_randint31(1, 1) == 271041745u);
    CHECK(python_randint31(42, 0) == 478163327u);
    CHECK(python_randint31(5, 0) == 1097127993u); // random.Random(-5) seeds with |-5|
    CHECK(python_randint31((uint64_t{1} << 40) + 3, 1) == 261273136u);
    CHECK(python_randint31(INT64_MAX, 2) == 2108559838u);
}

TEST_CASE("get_seed: global seed set or not, op seed given or not") {
    const uint64_t m = tf_max_int32;
    CHECK(tf_get_seed(std::nullopt, py(5)) == TfSeeds{87654321, 5});
    CHECK(tf_get_seed(std::nullopt, py(tf_max_int32 + 3)) == TfSeeds{87654321, 3});
    CHECK(tf_get_seed(std::nullopt, py(-1)) == TfSeeds{87654321, m - 1});
    CHECK(tf_get_seed(std::nullopt, Seed{UINT64_MAX, false}) == TfSeeds{87654321, UINT64_MAX % m});
    CHECK(tf_get_seed(py(7), py(5)) == TfSeeds{7, 5});
    CHECK(tf_get_seed(py(-2), py(5)) == TfSeeds{m - 2, 5});
    CHECK(tf_get_seed(py(42), std::nullopt) == TfSeeds{42, 478163327});
    CHECK(tf_get_seed(py(42), std::nullopt, 1) == TfSeeds{42, 107420369});
    // The op seed is drawn from random.Random(G) with the whole G, not G mod M.
    CHECK(tf_get_seed(py((int64_t{1} << 40) + 3), std::nullopt, 1) ==
          TfSeeds{((uint64_t{1} << 40) + 3) % m, 261273136});
    CHECK(tf_get_seed(py(-5), std::nullopt) == TfSeeds{m - 5, 1097127993});
    CHECK(tf_get_seed(py(0), py(0)) == TfSeeds{0, m});
    CHECK(tf_get_seed(py(tf_max_int32), py(tf_max_int32)) == TfSeeds{0, m});
    CHECK_FALSE(tf_get_seed(std::nullopt, std::nullopt));
}

TEST_CASE("iterator k's seeds are words 2k, 2k+1 of Philox(seed, seed2)") {
    PhiloxWords w(1, 2);
    for (uint64_t k = 0; k < 9; ++k) {
        uint64_t a = w(), b = w();
        CHECK(tf_iterator_seeds({1, 2}, k) == TfSeeds{a, b});
    }
    CHECK(tf_iterator_seeds({1, 2}, 5, false) == TfSeeds{1, 2});
}

TEST_CASE("tf.data's shuffle kernel test vectors (shuffle_dataset_op_test.cc)") {
    using V = std::vector<Sample>;
    // buffer 3, no reshuffle: every iterator the same.
    CHECK(kernel_order(10, 3, {1, 2}, 0, false) == V{2, 3, 0, 5, 6, 4, 7, 8, 9, 1});
    CHECK(kernel_order(10, 3, {1, 2}, 1, false) == V{2, 3, 0, 5, 6, 4, 7, 8, 9, 1});
    CHECK(kernel_order(10, 10, {1, 2}, 0, true) == V{2, 6, 1, 3, 9, 5, 0, 8, 7, 4});
    CHECK(kernel_order(10, 10, {1, 2}, 1, true) == V{1, 6, 0, 5, 2, 7, 4, 3, 9, 8});
    CHECK(kernel_order(10, 2, {1, 2}, 0, true) == V{0, 2, 1, 3, 5, 6, 4, 7, 8, 9});
    CHECK(kernel_order(10, 2, {1, 2}, 1, true) == V{1, 0, 2, 3, 4, 5, 6, 7, 9, 8});
    CHECK(kernel_order(10, 10, {2, 2}, 0, true) == V{3, 0, 8, 1, 5, 4, 7, 2, 6, 9});
    CHECK(kernel_order(10, 10, {2, 2}, 1, true) == V{4, 6, 9, 0, 1, 8, 2, 7, 3, 5});
}

TEST_CASE("a shuffle's prefix is the start of its full order; a buffer past n changes nothing") {
    TfShuffle sh;
    auto in = iota(1000);
    std::vector<Sample> full, prefix, big;
    sh.run(in, 64, {3, 4}, SIZE_MAX, full);
    sh.run(in, 64, {3, 4}, 10, prefix);
    CHECK(full.size() == 1000);
    CHECK(std::vector<Sample>(full.begin(), full.begin() + 10) == prefix);
    sh.run(in, 1000, {3, 4}, SIZE_MAX, full);
    sh.run(in, uint64_t{1} << 40, {3, 4}, SIZE_MAX, big);
    CHECK(full == big);
    std::vector<Sample> one;
    sh.run(in, 1, {3, 4}, SIZE_MAX, one);
    CHECK(one == in); // a buffer of one element keeps the input order
}
