// SPDX-License-Identifier: MIT
// What the clairfs ranges tests share: a scratch directory, files written
// whole, and a file's bytes at an extent, read with pread as the mount will.
#pragma once

#include "disk_tree.hpp"
#include "ranges/extents.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <random>
#include <string>
#include <unistd.h>

namespace clairfs::test {

inline void write_bytes(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline std::string bytes_at(const fs::path& path, const ranges::Extent& e) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string out(e.length, '\0');
    ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(e.offset));
    ::close(fd);
    REQUIRE(n == static_cast<ssize_t>(e.length));
    return out;
}

inline std::string random_bytes(std::mt19937_64& rng, size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
}

} // namespace clairfs::test
