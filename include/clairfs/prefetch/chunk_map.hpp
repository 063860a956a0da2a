// SPDX-License-Identifier: MIT
// Which files the tiers hold by chunk, and where each chunk lies. A file
// too large to be held whole (above EngineOptions::max_file: a TFRecord
// shard, an LMDB or HDF5 file) is cut into aligned chunks of one size, the
// last one shorter. Chunks are numbered densely from 0, file after file in
// index order, so the RAM and SSD tiers, the fetch pool and the SSD writer
// take a chunk number where they take a node id for whole files. The
// numbering depends only on the index and the two sizes: a remount over an
// unchanged dataset numbers its chunks alike (the SSD tier's journal does
// not rely on that: it names a chunk by path and offset).
#pragma once

#include "clairfs/index/index.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::prefetch {

using ChunkId = uint32_t; // in the tiers' key space of its own
inline constexpr ChunkId no_chunk = UINT32_MAX;

struct ChunkRange {
    index::NodeId node = 0;
    uint64_t offset = 0; // in the file, a multiple of the chunk size
    uint32_t length = 0; // the chunk size, or less for a file's last chunk
};

class ChunkMap {
public:
    ChunkMap() = default; // chunks nothing
    // Regular files of `idx` larger than `above` bytes, in chunks of
    // `chunk_size` (> 0) bytes. Files beyond the 2^32 - 1 chunks the key
    // space takes are left out (read through), and said in skipped().
    ChunkMap(const index::Index& idx, uint64_t above, uint32_t chunk_size);

    bool covers(index::NodeId node) const { return node < first_.size() && first_[node] != no_chunk; }
    // The chunk holding byte `offset` of a covered file (offset < its size).
    ChunkId chunk_at(index::NodeId node, uint64_t offset) const {
        return first_[node] + static_cast<ChunkId>(offset / chunk_size_);
    }
    // The chunk after `id` in the same file, or no_chunk after its last.
    ChunkId next_in_file(ChunkId id) const;
    ChunkRange range(ChunkId id) const;
    // Which covered file holds the chunk: 0 .. files() - 1, in index order.
    size_t file_index(ChunkId id) const;

    uint32_t chunk_size() const { return chunk_size_; }
    size_t chunks() const { return total_; }
    size_t files() const { return starts_.size(); }
    uint64_t bytes() const { return bytes_; }     // of the files covered
    uint64_t skipped() const { return skipped_; } // files left out for want of chunk numbers

private:
    struct Start {
        ChunkId first;
        index::NodeId node;
        uint64_t size;
    };
    const Start& start_of(ChunkId id) const;

    uint32_t chunk_size_ = 0;
    std::vector<ChunkId> first_; // per node: its first chunk, or no_chunk
    std::vector<Start> starts_;  // covered files, by first chunk
    size_t total_ = 0;
    uint64_t bytes_ = 0;
    uint64_t skipped_ = 0;
};

// How the SSD tier's journal names chunk `r` of the file at `path`:
// "path@offset". Offsets are digits, so the last '@' splits it however
// the file is named, and a chunk size that changed names other chunks.
std::string chunk_journal_name(const std::string& path, const ChunkRange& r);

} // namespace clairfs::prefetch
