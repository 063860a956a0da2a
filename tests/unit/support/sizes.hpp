// SPDX-License-Identifier: MIT
// The sizes the cache tests count in: a 4 KiB block (the SSD tier's and
// the arena's alignment) and a MiB. One definition, so test files built
// together (meson's unity build of each unit binary) do not clash.
#pragma once

#include <cstdint>

namespace clairfs::test {

inline constexpr uint64_t K4 = 4096;
inline constexpr uint64_t MiB = 1 << 20;

} // namespace clairfs::test
