// SPDX-License-Identifier: MIT
// A fixed divisor's remainders, for the scans that reduce millions of
// generator draws mod n (chain_scan.cpp, job_detect.cpp).
#pragma once

#include <cstdint>

namespace clairfs::order {

// x % d for 32-bit x by a fixed d, with two multiplications instead of a
// division (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019): exact for every 32-bit x and d.
class FastMod {
public:
    explicit FastMod(uint32_t d) : d_(d), m_(~uint64_t{0} / d + 1) {}
    uint32_t operator()(uint32_t x) const {
        __extension__ using u128 = unsigned __int128;
        uint64_t low = m_ * x;
        return static_cast<uint32_t>((static_cast<u128>(low) * d_) >> 64);
    }

private:
    uint64_t d_;
    uint64_t m_;
};

} // namespace clairfs::order
