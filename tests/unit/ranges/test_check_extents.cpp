// SPDX-License-Identifier: MIT
// What every manifest clairfs ranges writes is held to: within the file,
// no overlap, no empty sample, none of 4 GiB.
#include "ranges/extents.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using ranges::Extent;

namespace {

std::string why(const std::vector<Extent>& e, uint64_t size = 1000) {
    auto f = ranges::check_extents("f.bin", e, size);
    CHECK(f.usage == !f.message.empty());
    return f.message;
}

} // namespace

TEST_CASE("check_extents") {
    CHECK(why({{0, 10}, {10, 990}}) == "");
    CHECK(why({{500, 10}, {0, 500}, {510, 1}}) == ""); // any order, touching
    CHECK(why({{0, 10}, {5, 0}}) == "f.bin: sample 1 is empty");
    CHECK(why({{0, 10}, {995, 10}}) ==
          "f.bin: sample 1 [995, 1005) ends past the end of the file (1000 bytes)");
    CHECK(why({{UINT64_MAX - 2, 5}}).find("ends past the end") != std::string::npos);
    CHECK(why({{0, 1ull << 32}}, 1ull << 33) ==
          "f.bin: sample 0 is 4294967296 bytes; clairfs takes samples below 4 GiB");
    CHECK(why({{100, 10}, {0, 10}, {105, 20}}) ==
          "f.bin: samples 0 [100, 110) and 2 [105, 125) overlap");
    CHECK(why({{0, 10}, {0, 10}}).find("overlap") != std::string::npos);
}
