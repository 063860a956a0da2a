// SPDX-License-Identifier: MIT
#include "clairfs/prefetch/chunk_map.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::prefetch {

ChunkMap::ChunkMap(const index::Index& idx, uint64_t above, uint32_t chunk_size)
    : chunk_size_(chunk_size), first_(idx.size(), no_chunk) {
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (!S_ISREG(n.mode) || n.size <= above) continue;
        uint64_t count = (n.size + chunk_size - 1) / chunk_size;
        if (total_ + count >= no_chunk) {
            ++skipped_;
            continue;
        }
        first_[id] = static_cast<ChunkId>(total_);
        starts_.push_back({static_cast<ChunkId>(total_), id, n.size});
        total_ += count;
        bytes_ += n.size;
    }
}

const ChunkMap::Start& ChunkMap::start_of(ChunkId id) const {
    // The last file whose first chunk is at or before id.
    auto it = std::upper_bound(starts_.begin(), starts_.end(), id,
                               [](ChunkId v, const Start& s) { return v < s.first; });
    return *std::prev(it);
}

size_t ChunkMap::file_index(ChunkId id) const {
    return static_cast<size_t>(&start_of(id) - starts_.data());
}

ChunkRange ChunkMap::range(ChunkId id) const {
    const Start& s = start_of(id);
    ChunkRange r;
    r.node = s.node;
    r.offset = uint64_t{id - s.first} * chunk_size_;
    r.length = static_cast<uint32_t>(std::min<uint64_t>(chunk_size_, s.size - r.offset));
    return r;
}

ChunkId ChunkMap::next_in_file(ChunkId id) const {
    const Start& s = start_of(id);
    uint64_t next_offset = uint64_t{id - s.first + 1} * chunk_size_;
    return next_offset < s.size ? id + 1 : no_chunk;
}

std::string chunk_journal_name(const std::string& path, const ChunkRange& r) {
    return path + "@" + std::to_string(r.offset);
}

} // namespace clairfs::prefetch
