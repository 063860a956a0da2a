// SPDX-License-Identifier: MIT
// The packed file the ranges tests read: 64 records of 16 KiB in one file,
// byte k being (7k + k/4093) mod 256, so a record read at the wrong offset
// shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace clairfs::test {

inline constexpr uint64_t record = 16 << 10;
inline constexpr size_t records = 64;

inline std::string packed_records() {
    std::string packed(record * records, '\0');
    for (size_t k = 0; k < packed.size(); ++k) packed[k] = static_cast<char>((k * 7 + k / 4093) & 0xff);
    return packed;
}

} // namespace clairfs::test
