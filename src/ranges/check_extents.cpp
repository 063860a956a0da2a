// SPDX-License-Identifier: MIT
#include "extents.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace clairfs::ranges {
namespace {

std::string span(const Extent& e) {
    return "[" + std::to_string(e.offset) + ", " + std::to_string(e.offset + e.length) + ")";
}

} // namespace

Failure check_extents(const std::string& file, const std::vector<Extent>& extents,
                      uint64_t file_size) {
    // parse_ranges' limits: sample numbers are uint32, UINT32_MAX excluded.
    if (extents.size() >= UINT32_MAX)
        return refused(file + " has " + std::to_string(extents.size()) +
                       " samples; clairfs takes at most 4294967294");
    for (size_t i = 0; i < extents.size(); ++i) {
        const Extent& e = extents[i];
        std::string sample = file + ": sample " + std::to_string(i);
        if (e.length == 0) return refused(sample + " is empty");
        if (e.length > UINT32_MAX)
            return refused(sample + " is " + std::to_string(e.length) +
                           " bytes; clairfs takes samples below 4 GiB");
        if (e.offset > file_size || e.length > file_size - e.offset)
            return refused(sample + " " + span(e) + " ends past the end of the file (" +
                           std::to_string(file_size) + " bytes)");
    }
    // Overlap shows between neighbours in offset order; the extents keep the
    // sample order, so the sort is of their indices.
    std::vector<uint32_t> by_offset(extents.size());
    std::iota(by_offset.begin(), by_offset.end(), 0u);
    std::sort(by_offset.begin(), by_offset.end(),
              [&](uint32_t a, uint32_t b) { return extents[a].offset < extents[b].offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
        const Extent& prev = extents[by_offset[k - 1]];
        const Extent& next = extents[by_offset[k]];
        if (next.offset < prev.offset + prev.length)
            return refused(file + ": samples " + std::to_string(by_offset[k - 1]) + " " +
                           span(prev) + " and " + std::to_string(by_offset[k]) + " " +
                           span(next) + " overlap");
    }
    return {};
}

Failure check_bytes(int fd, const std::string& file, uint64_t sample, const Extent& e,
                    const void* expected) {
    std::string got(e.length, '\0');
    ssize_t n = sys::pread_full(fd, got.data(), got.size(), static_cast<off_t>(e.offset));
    if (n < 0)
        return failure("cannot read " + file + ": " + sys::error_text(static_cast<int>(n)));
    if (static_cast<uint64_t>(n) != e.length || memcmp(got.data(), expected, e.length) != 0)
        return failure(file + ": sample " + std::to_string(sample) + " " + span(e) +
                       " does not hold the bytes the library read (a bug in clairfs ranges; "
                       "please report it)");
    return {};
}

} // namespace clairfs::ranges
