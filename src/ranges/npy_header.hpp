// SPDX-License-Identifier: MIT
// The header of a .npy file (numpy's NEP 1 format): the magic "\x93NUMPY",
// a version byte pair, the header's length (2 bytes little-endian in 1.0, 4
// in 2.0 and 3.0), then a Python dict literal such as
//   {'descr': '<i8', 'fortran_order': False, 'shape': (1001,), }
// padded with spaces to a newline; the array's bytes follow. Only what
// `clairfs ranges packed --offsets` reads is taken: little-endian 4- or
// 8-byte integers in C order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::ranges {

struct NpyHeader {
    bool is_signed = false;
    unsigned item_size = 0; // 4 or 8
    std::vector<uint64_t> shape;
    uint64_t data_offset = 0; // where the array's bytes start
};

// Parses the header at the start of `bytes` (the file's first bytes, at
// least the whole header). Returns "" or why it is not a header of an array
// clairfs ranges reads.
std::string parse_npy_header(std::string_view bytes, NpyHeader& out);

} // namespace clairfs::ranges
