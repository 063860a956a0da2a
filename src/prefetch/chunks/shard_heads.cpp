// SPDX-License-Identifier: MIT
// Files held by chunk (TFRecord or tar shards above max_file) are read
// ahead as they are read (ChunkStore::read_ahead), which leaves each one's
// first chunks to be waited for after its open. A registered job's order
// says which of them open next (list_files: the shards, in the order the
// pipeline opens them): their first chunks are fetched before the opens,
// soonest first, from the SSD tier if it holds them.
#include "kernel_shards.hpp"
#include "prefetch/timeline.hpp"
#include "range_jobs.hpp"

#include <algorithm>
#include <vector>

namespace clairfs::prefetch {
namespace {

// How many of the files due next, and how many chunks of each: a reader
// opening a shard finds its first chunks held, and its own read-ahead
// (sequential from the first READ) goes on from there. Two files: with
// eight parallel readers the eighth next opens an eighth of an epoch
// later, and its chunks would hold RAM the open files' read-ahead needs.
constexpr uint32_t head_files = 2;
constexpr uint32_t head_chunks = 2;
// Files the kernel reads itself have their heads read into the page cache
// instead, which holds no RAM of the chunks': as many files as eight
// parallel readers open next.
constexpr uint32_t kernel_head_files = 8;

} // namespace

// Marked unread as read-ahead's chunks are, and within the same half of
// the chunks' RAM: eviction passes over them until the shard's reader
// takes them (unmarked, the next round's admissions evicted most of them
// before their opens and they were read again), and a quarter of the RAM
// at most goes to them.
void prefetch_shard_heads(ChunkStore& chunks, const std::vector<JobView>& views) {
    const ChunkMap& map = chunks.map();
    const uint64_t budget = chunks.ram_capacity() / 4;
    uint64_t walked = 0;
    std::vector<index::NodeId> seen; // a file several ranks open comes once per rank
    Timeline future(views);
    index::NodeId id;
    KernelShards* kernel = chunks.kernel_shards();
    const uint32_t files = kernel && kernel->on() ? kernel_head_files : head_files;
    while (seen.size() < files && future.next(id)) {
        if (!map.covers(id) || std::find(seen.begin(), seen.end(), id) != seen.end()) continue;
        seen.push_back(id);
        // The kernel reads it whole from the SSD tier itself: no READ of
        // it will take chunks from RAM; its head is read ahead into the
        // page cache instead.
        if (kernel && kernel->will_read(id)) {
            kernel->read_ahead(id, head_chunks);
            continue;
        }
        if (seen.size() > head_files) continue; // only the kernel's are read so far ahead
        ChunkId c = map.chunk_at(id, 0);
        for (uint32_t k = 0; k < head_chunks && c != no_chunk; ++k, c = map.next_in_file(c)) {
            walked += map.range(c).length;
            if (walked > budget) return;
            chunks.prefetch_unread(c);
        }
    }
}

} // namespace clairfs::prefetch
