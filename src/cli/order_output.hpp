// SPDX-License-Identifier: MIT
// Writes `clairfs order` lines fast: an epoch of ImageNet-22k is 14 million
// numbers, so no per-number stream formatting.
#pragma once

#include "clairfs/order/randperm.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::cli {

class LineWriter {
public:
    explicit LineWriter(FILE* out) : out_(out) {}
    ~LineWriter() { flush(); }

    // One epoch as a JSON array of indices, then a newline.
    void indices(const std::vector<order::Sample>& order);

    // One epoch as a little-endian uint64 count, then the indices as
    // little-endian uint32 (the --binary format).
    void binary_indices(const std::vector<order::Sample>& order);

    // One epoch as a JSON array of strings produced by path(i), then a newline.
    template <typename PathOf> void paths(const std::vector<order::Sample>& order, PathOf&& path) {
        buf_ += '[';
        for (size_t i = 0; i < order.size(); ++i) {
            if (i) buf_ += ',';
            json_string(path(order[i]));
            if (buf_.size() > flush_at) flush();
        }
        buf_ += "]\n";
    }

    bool flush(); // false if the output failed (e.g. a closed pipe)

private:
    static constexpr size_t flush_at = 1 << 20;
    void json_string(std::string_view s);

    FILE* out_;
    std::string buf_;
};

} // namespace clairfs::cli
