// SPDX-License-Identifier: MIT
// How many requests of each kind the kernel sent this mount. A relaxed
// add per request (request_guard.hpp counts them), read by status: what a
// file costs in round trips (OPEN, READ, RELEASE, ...) is the first thing to
// know about a FUSE mount's overhead, and the kernel keeps no such count.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace clairfs::fuse {

// The operations clairfs answers itself (the read-only refusals are not
// counted: they are answered without touching anything).
inline constexpr std::array<std::string_view, 15> request_kinds{
    "lookup", "forget",  "forget_multi", "getattr", "readlink",
    "opendir", "readdir", "readdirplus", "open",    "read",
    "release", "statfs",  "write",       "flush",   "setattr"};

// The index of `name` in request_kinds, or request_kinds.size() for a
// name not there (not counted: the unit tests' own operations).
consteval size_t request_kind(std::string_view name) {
    for (size_t i = 0; i < request_kinds.size(); ++i)
        if (request_kinds[i] == name) return i;
    return request_kinds.size();
}

struct RequestCounts {
    std::array<std::atomic<uint64_t>, request_kinds.size()> n{};

    void add(size_t kind) { n[kind].fetch_add(1, std::memory_order_relaxed); }
    uint64_t of(size_t kind) const { return n[kind].load(std::memory_order_relaxed); }
};

} // namespace clairfs::fuse
