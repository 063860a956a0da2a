// SPDX-License-Identifier: MIT
#include "clairfs/order/philox.hpp"

namespace clairfs::order {
namespace {

constexpr uint32_t mul_a = 0xD2511F53u, mul_b = 0xCD9E8D57u;
constexpr uint32_t bump_a = 0x9E3779B9u, bump_b = 0xBB67AE85u;

Philox4x32::Block round(const Philox4x32::Block& c, const std::array<uint32_t, 2>& k) {
    uint64_t p0 = uint64_t{mul_a} * c[0];
    uint64_t p1 = uint64_t{mul_b} * c[2];
    return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
            static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
}

} // namespace

Philox4x32::Block Philox4x32::operator()() {
    Block c = counter_;
    std::array<uint32_t, 2> k = key_;
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k[0] += bump_a;
            k[1] += bump_b;
        }
        c = round(c, k);
    }
    skip(1);
    return c;
}

// A 128-bit addition, carrying word by word.
void Philox4x32::skip(uint64_t blocks) {
    uint64_t low = (uint64_t{counter_[1]} << 32 | counter_[0]) + blocks;
    bool carry = low < blocks;
    counter_[0] = static_cast<uint32_t>(low);
    counter_[1] = static_cast<uint32_t>(low >> 32);
    for (size_t i = 2; carry && i < 4; ++i) carry = ++counter_[i] == 0;
}

} // namespace clairfs::order
