// SPDX-License-Identifier: MIT
// One level of the node-local cache (RAM now, local SSD next). A tier only
// stores and finds whole files within its byte budget; what to keep and
// what to evict is decided above it, by prefetch/ (next use when the future
// is known, first touch when it is not).
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/index/node.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::cache {

struct TierStats {
    uint64_t bytes = 0;    // held now
    uint64_t capacity = 0; // the budget
    uint64_t entries = 0;
    uint64_t hits = 0;   // get() that found the file
    uint64_t misses = 0; // get() that did not
    uint64_t evictions = 0;
    uint64_t rejected = 0; // put() refused for want of room
};

// Whether a tier works, for status: a tier backed by a device can turn
// itself off after errors and keep serving nothing.
struct TierHealth {
    bool enabled = true;
    std::string error;        // the one-line reason it is off, or ""
    uint64_t errors = 0;      // failed reads or writes, checksum mismatches
    uint64_t reused = 0;      // entries kept from a previous mount
    uint64_t invalidated = 0; // ... and dropped because the file changed
};

class Tier {
public:
    virtual ~Tier() = default;
    virtual const char* name() const = 0;

    // The file's bytes, or nullptr. Counts a hit or a miss.
    virtual BlobRef get(index::NodeId id) = 0;
    // The file's bytes, or nullptr, counting nothing: for a second look at
    // a file whose open already counted its hit or miss.
    virtual BlobRef peek(index::NodeId id) const = 0;
    // Whether the file is held; counts nothing.
    virtual bool contains(index::NodeId id) const = 0;
    // Stores the file if it fits in the free budget, else returns false and
    // stores nothing; a tier never evicts on its own. Storing a file that is
    // already held returns true and keeps the old copy.
    virtual bool put(index::NodeId id, BlobRef blob) = 0;
    // Drops the file; returns the bytes freed (0 if it was not held).
    virtual uint64_t evict(index::NodeId id) = 0;
    // Appends every held file's id (any order).
    virtual void held(std::vector<index::NodeId>& out) const = 0;
    virtual TierStats stats() const = 0;
    virtual TierHealth health() const { return {}; }
};

} // namespace clairfs::cache
