// SPDX-License-Identifier: MIT
#include "mount_engine.hpp"

#include "clairfs/cache/blob_arena.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "clairfs/config/memory_budget.hpp"
#include "clairfs/log.hpp"
#include "clairfs/peer/peers.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "mount_table.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <malloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <xxhash.h>

namespace clairfs::cli {
namespace {

// --io-timeout for the engine and the SSD tier. Beyond a day a bound means
// nothing, and the product must fit int64.
std::chrono::milliseconds io_timeout_of(const config::MountOptions& o) {
    return std::chrono::milliseconds(static_cast<int64_t>(std::min(o.io_timeout, 86400.0) * 1000));
}

// Splits --ssd (auto: the dataset's bytes) between whole files and chunks
// in proportion to the dataset's bytes in each, as the RAM budget is.
struct SsdShare {
    uint64_t whole = 0; // extents of the files held whole
    uint64_t chunks = 0; // extents of the chunks
};

SsdShare ssd_need(const index::Index& idx, const prefetch::ChunkStore* chunks) {
    SsdShare need;
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        if (!S_ISREG(idx.node(id).mode)) continue;
        uint64_t extent = (idx.node(id).size + 4095) / 4096 * 4096;
        (chunks && chunks->covers(id) ? need.chunks : need.whole) += extent;
    }
    return need;
}

// --ssd auto: the tier's `need`, or its `share` of 90% of the directory's
// free space if less.
uint64_t auto_ssd_capacity(const cache::SsdOptions& s, uint64_t need, double share) {
    uint64_t capacity = std::max<uint64_t>(need, 4096);
    struct statvfs v;
    if (statvfs(s.dir.c_str(), &v) != 0) return capacity;
    // A cache file from an earlier mount is room this one may reuse, not
    // space taken: otherwise every remount would shrink it.
    struct stat old {};
    std::string cache_file = s.dir + "/" + cache::cache_file_stem(s.dataset) + ".cache";
    uint64_t reusable =
        stat(cache_file.c_str(), &old) == 0 ? static_cast<uint64_t>(old.st_blocks) * 512 : 0;
    auto room = static_cast<uint64_t>(
        (static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) * share +
         static_cast<double>(reusable)) *
        0.9);
    return std::min(capacity, std::max<uint64_t>(room, 4096));
}

// One SSD tier in --cache-dir (whole files or chunks, each its own cache
// file), sized by its share of --ssd (auto: see auto_ssd_capacity).
// Problems with the directory give a disabled tier that says why in
// status, not a failed mount.
std::unique_ptr<cache::SsdTier> open_ssd(const config::MountOptions& o, std::string dataset,
                                         cache::DescribeFile describe, size_t nodes,
                                         uint64_t need, uint64_t total_need,
                                         cache::PlaceEntry place = {}) {
    cache::SsdOptions s;
    s.dir = absolute_path(o.cache_dir);
    s.dataset = std::move(dataset);
    s.describe = std::move(describe);
    s.place = std::move(place);
    s.nodes = nodes;
    double share = total_need ? static_cast<double>(need) / static_cast<double>(total_need) : 1;
    s.io_timeout = io_timeout_of(o);
    s.check_once = o.fast_path.ssd_check == config::SsdCheck::once;
    // Half the descriptors (up to 65,536, the backing ids kept) for the
    // entry files the kernel reads, the rest for everything else; none for
    // record files' chunks, which share one file each.
    if (!place) s.open_files = std::min<uint64_t>(sys::raise_open_files_limit() / 2, 1 << 16);
    if (o.ssd == config::auto_ssd)
        s.capacity = auto_ssd_capacity(s, need, share);
    else
        s.capacity = static_cast<uint64_t>(static_cast<double>(o.ssd) * share) / 4096 * 4096;
    return cache::SsdTier::open(s);
}

// The chunks' journal names each by its file's path and offset
// (prefetch/chunk_map.hpp), so a remount with another --chunk-size finds
// only the ranges both sizes share (a file's short last chunk), and one
// with another --mem finds those of the files chunked in both.
cache::DescribeFile describe_chunks(const index::Index& idx, const prefetch::ChunkMap& map) {
    return [&idx, &map](index::NodeId id, cache::FileIdentity& out) {
        if (id >= map.chunks()) return false;
        prefetch::ChunkRange r = map.range(id);
        const index::Node& n = idx.node(r.node);
        idx.relative_path(r.node, out.path);
        out.path = prefetch::chunk_journal_name(out.path, r);
        out.size = r.length;
        out.mtime_ns = n.mtime_sec * 1'000'000'000 + n.mtime_nsec;
        return true;
    };
}

// A file's chunks share one SSD file of the file's size, each at its own
// offset, named by a hash of the file's path (cache::SharedPlace): the
// kernel can read the file whole from it once every chunk is there.
cache::PlaceEntry place_chunks(const index::Index& idx, const prefetch::ChunkMap& map) {
    return [&idx, &map](index::NodeId id, cache::SharedPlace& out) {
        if (id >= map.chunks()) return false;
        prefetch::ChunkRange r = map.range(id);
        std::string path;
        idx.relative_path(r.node, path);
        char name[24];
        std::snprintf(name, sizeof name, "r-%016" PRIx64, XXH3_64bits(path.data(), path.size()));
        out.file = name;
        out.offset = r.offset;
        out.file_size = idx.node(r.node).size;
        return true;
    };
}

void attach_ssd(const config::MountOptions& o, const std::string& backing_real,
                const index::Index& idx, prefetch::Engine& engine) {
    prefetch::ChunkStore* chunks = engine.chunks();
    SsdShare need = ssd_need(idx, chunks);
    uint64_t total = need.whole + need.chunks;
    if (need.whole > 0 || !chunks)
        engine.attach_ssd(open_ssd(o, backing_real, cache::describe_index(idx), idx.size(),
                                   need.whole, total));
    if (chunks)
        engine.attach_chunk_ssd(open_ssd(o, backing_real + "#chunks",
                                         describe_chunks(idx, chunks->map()),
                                         chunks->map().chunks(), need.chunks, total,
                                         place_chunks(idx, chunks->map())));
}

} // namespace

prefetch::EngineOptions engine_options(const config::MountOptions& o) {
    prefetch::EngineOptions e;
    e.mem = o.mem == config::auto_mem ? config::usable_memory() / 4 : o.mem;
    e.fetch_threads = o.fetch_threads;
    e.chunk_size = static_cast<uint32_t>(o.chunk_size);
    e.io_timeout = io_timeout_of(o);
    e.fuse_threads = o.threads;
    e.stage = o.stage;
    // --kernel-opens drops files' pages after use, to see every open as a
    // READ; peers are served from the RAM tier, which must then hold the
    // bytes itself.
    const config::FastPath& f = o.fast_path;
    e.watch_opens = f.opens == config::Opens::fanotify;
    e.handover =
        f.handover && !f.kernel_opens && !e.watch_opens && o.peers.mode == config::Peers::none;
    // With opens told after the fact, the push ahead is the only push.
    e.push_ahead = f.push_ahead || e.watch_opens;
    // --kernel-opens makes no OPEN to push at; --push-ahead pushes the same
    // files earlier; a file handed over has no copy in the RAM tier.
    e.open_push = f.open_push && !f.kernel_opens && !e.push_ahead && !e.handover;
    // --kernel-opens sees no RELEASE to drop at and drops pages itself; a
    // file handed over has only the kernel's copy; --push-ahead pushes a
    // file before its open, which a drop at the last close would undo.
    // Under --opens fanotify a drop comes at the close event, after which
    // the file is pushed again when next due.
    e.one_copy = f.kernel_opens || (f.push_ahead && !e.watch_opens) || e.handover
                     ? config::When::never
                     : f.one_copy;
    e.drop_behind = f.drop_behind;
    e.passthrough_above = o.max_read;
    e.readahead = o.max_read;
    return e;
}

void set_up_heap(const prefetch::EngineOptions& eo) {
    // glibc raises its mmap threshold to the size of each large block freed
    // (read-through ranges, FUSE buffers, blobs past the arena), after which
    // such blocks come from the per-thread heaps and stay resident once
    // freed: under bench/soak.py's 10M reads with registrations rewritten,
    // the daemon grew to 221 MiB on a 32 MiB budget while its live heap
    // never passed 23 MB. Fixed thresholds give them back to the system.
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    if (eo.mem == 0) return;
    // Headroom for buffers in flight and for evicted ones an open file
    // still holds; past it buffers come from the heap (counted in status).
    uint64_t headroom = std::max<uint64_t>(eo.mem / 8, 16 << 20);
    if (auto why = cache::BlobArena::install(eo.mem + headroom); !why.empty())
        LOG_WARN("RAM tier buffers come from the heap: %s", why.c_str());
    else if (eo.handover)
        cache::BlobArena::installed()->set_give_back(true);
}

void attach_tiers(const config::MountOptions& o, const std::string& backing_real,
                  const index::Index& idx, PeerLaunch& launch, prefetch::Engine& engine) {
    if (!o.cache_dir.empty() && o.ssd != 0) attach_ssd(o, backing_real, idx, engine);
    if (o.peers.mode == config::Peers::none) return;
    peer::PeerOptions po;
    po.timeout = std::chrono::milliseconds(static_cast<int64_t>(o.peers.timeout * 1000));
    po.wait_bound = io_timeout_of(o);
    engine.attach_peers(
        std::make_unique<peer::Peers>(std::move(launch.group), launch.listen_fd, po));
}

} // namespace clairfs::cli
