// SPDX-License-Identifier: MIT
// The local-SSD tier: one file per entry in a directory per dataset in
// --cache-dir, within a reserve preallocated to --ssd, written with
// O_DIRECT through libaio, every read of the daemon's checked against the
// checksum taken when the file was stored, and a journal beside them so
// that a remount over an unchanged dataset starts warm. An entry read back
// intact once in this mount may be handed to the kernel, which then reads
// it itself (FUSE passthrough): one file per entry is what makes that
// possible. A device that fails turns the tier off, never the mount: a
// disabled tier holds nothing and refuses everything.
#pragma once

#include "clairfs/cache/block_device.hpp"
#include "clairfs/cache/tier.hpp"
#include "clairfs/index/index.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace clairfs::cache {

// A file as the current mount sees it. The journal names files by relative
// path, because NodeIds change from one mount to the next.
struct FileIdentity {
    std::string path; // relative to the backing root
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

// Fills `out` for a regular file of this mount; false for anything else.
// Called from any thread, and for every id at open.
using DescribeFile = std::function<bool(index::NodeId id, FileIdentity& out)>;

// Describes the files of `idx`, which must outlive the tier.
DescribeFile describe_index(const index::Index& idx);

// "clairfs-<16 hex digits>": the cache file's and journal's name without
// the suffix (".cache", ".journal"), from a hash of the absolute backing
// root. For callers that size --ssd auto: the cache file already there
// counts as room, or a remount would shrink it and lose entries.
std::string cache_file_stem(const std::string& dataset);

// An entry's place in a file it shares (SsdOptions::place): the file's
// name in the entries' directory (unique to the record file, never a hex
// block number, which names an entry's own file), the entry's offset in
// it, a multiple of 4 KiB, and the file's size.
struct SharedPlace {
    std::string file;
    uint64_t offset = 0;
    uint64_t file_size = 0;
};
using PlaceEntry = std::function<bool(index::NodeId id, SharedPlace& out)>;

struct SsdOptions {
    std::string dir;       // --cache-dir; must exist
    uint64_t capacity = 0; // --ssd; the cache file's size, rounded down to 4 KiB
    // The absolute backing root: names the cache file and its journal, so
    // mounts of different datasets can share a cache directory.
    std::string dataset;
    DescribeFile describe;
    size_t nodes = 0; // ids [0, nodes) are described at open, for restart-warm
    // After this many failed reads or writes the tier turns itself off.
    unsigned max_io_errors = 8;
    // --io-timeout: a device request that has not completed by then turns
    // the tier off (0: no bound).
    std::chrono::milliseconds io_timeout{0};
    // --ssd-check once: an entry checked once in this mount (its write, or
    // after a remount its first read-back) stays the kernel's to read while
    // its file is unchanged (inode, size, change time), its pages in the
    // page cache or not. False (--ssd-check resident): only while every page
    // the daemon's check read is still in the page cache.
    bool check_once = false;
    // Entry files kept open, at most: a file the kernel reads (passed
    // through, read ahead, dropped behind) stays open while its entry is
    // held, so that each later open of it costs an fstat, not an openat by
    // name and a close. 0: none kept. The mount gives it a share of
    // RLIMIT_NOFILE.
    size_t open_files = 0;
    // Where an entry's bytes go when it shares one file with others: the
    // chunks of a record file (a TFRecord shard) live in one sparse file
    // of the record file's size, each at its own offset, so that the
    // kernel can read the record file itself from it (FUSE passthrough
    // reads a backing file at the FUSE file's own offsets) once every
    // chunk is there (open_whole_for_kernel). Null, or false for an id:
    // the entry has a file of its own.
    PlaceEntry place;
    // Wraps the cache file's device; tests use it to inject errors.
    std::function<std::unique_ptr<BlockDevice>(std::unique_ptr<BlockDevice>)> wrap_device;
};

// Everything status may want to say about the tier.
struct SsdState {
    bool enabled = false;
    bool direct = false;    // O_DIRECT; false: buffered I/O, where O_DIRECT was refused
    std::string error;      // the last error, one line ("" if none)
    std::string cache_file; // the reserve's path, for messages
    std::string entries_dir; // the entries' directory
    uint64_t verified = 0;   // entries the kernel may read now (SsdTier::verified)
    uint64_t open_files = 0; // entry files kept open (SsdOptions::open_files)
    uint64_t errors = 0;    // failed reads and writes, checksum mismatches, journal failures
    uint64_t io_errors = 0; // ... of which device errors, the ones that turn the tier off
    uint64_t reads = 0;     // device reads that returned intact bytes
    uint64_t writes = 0;    // files written
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
    uint64_t reused = 0;       // entries kept from a previous mount
    uint64_t invalidated = 0;  // entries dropped at open: the file changed or is gone
    uint64_t discarded = 0;    // entries dropped at open: extent outside the file or overlapping
    uint64_t allocated = 0;    // bytes of the cache file in use: sizes rounded up to 4 KiB
    uint64_t largest_free = 0; // the largest file a put could store now, rounded to 4 KiB
};

class SsdTier final : public Tier {
public:
    // Opens or creates the cache file and its journal, preallocates it and
    // takes back the entries of a previous mount whose files did not change.
    // Never throws for the environment: a missing directory, no space, no
    // permission or a cache file in use give a disabled tier whose error
    // says why (logged once).
    static std::unique_ptr<SsdTier> open(const SsdOptions& options);
    // Makes the written data durable and rewrites the journal compactly.
    ~SsdTier() override;
    SsdTier(const SsdTier&) = delete;
    SsdTier& operator=(const SsdTier&) = delete;

    const char* name() const override { return "ssd"; }
    // Both read the file from the device, without the lock, into a fresh
    // blob and check its checksum; a failed read or a mismatch drops the
    // entry and returns nullptr (get() counts a miss then).
    BlobRef get(index::NodeId id) override;
    BlobRef peek(index::NodeId id) const override;
    bool contains(index::NodeId id) const override;
    // Writes in the calling thread; the entry is visible once the bytes are
    // on the device. Bytes are accounted as the files' sizes, room as their
    // extents (sizes rounded up to 4 KiB, contiguous): put refuses a file
    // whose extent does not fit, so it can refuse while stats() shows free
    // bytes. A put of a file another thread is writing returns true; a put
    // of an id the file table does not describe returns false.
    bool put(index::NodeId id, BlobRef blob) override;
    uint64_t evict(index::NodeId id) override;
    void held(std::vector<index::NodeId>& out) const override;
    TierStats stats() const override;
    TierHealth health() const override;

    SsdState state() const;

    // Reads the file through the page cache, checking its checksum as
    // get() does (counting a hit or miss where `count`, as get() does): its
    // pages are then the kernel's for the reads open_for_kernel() lets it
    // make itself.
    BlobRef warm(index::NodeId id, bool count = false);
    // An open the kernel serves from the entry itself: a hit.
    void served_by_kernel();
    // Whether the entry was read back intact through the page cache in
    // this mount (warm, or any read where the directory takes no O_DIRECT)
    // and its pages are not known to have gone since: only such an entry is
    // handed to the kernel. With check_once: written in this mount, or read
    // back intact in it by any read, and its file not seen changed since.
    bool verified(index::NodeId id) const;
    bool checks_once() const;
    // A read-only descriptor of a verified entry's file, for the kernel to
    // read itself (FUSE passthrough); the caller closes it. -ENOENT: not
    // held (or evicted meanwhile), or an empty file, which has no file;
    // -EAGAIN: held but not verified yet; -ENODATA: verified, but some of
    // its pages have left the page cache (the entry is no longer verified
    // then; with check_once the pages are not asked, and -EAGAIN also
    // means its file changed since it was checked, which takes the mark).
    // The descriptor stays the entry's bytes after an eviction: an
    // evicted file is unlinked, never overwritten.
    int open_for_kernel(index::NodeId id);
    // The same for the shared file of entries first .. last (one record
    // file's chunks, SsdOptions::place): a descriptor of it once every one
    // of them is held and verified and the file is as the tier last wrote
    // it (check_once: its inode and change time; else every page of it in
    // the page cache). -ENOENT where one is not held or they do not share
    // one file, -EAGAIN where one is not verified or the file changed.
    int open_whole_for_kernel(index::NodeId first, index::NodeId last);
    // Drops the entry's file's pages from the page cache (the kernel read
    // it for a job that will not need it again before a prefetch reads it
    // anew), and with them its verified mark unless check_once; 0 or
    // -errno, -ENOENT for an entry not held.
    int drop_pages(index::NodeId id);
    // check_once: asks the kernel to read a verified entry's bytes into the
    // page cache now (POSIX_FADV_WILLNEED; an entry sharing its file: its
    // range of that file), ahead of the open it is due for; the daemon
    // copies nothing. 0 or -errno, -ENOENT for an entry not
    // held, -EAGAIN for one not verified.
    int read_ahead(index::NodeId id);
    // Told of every entry that leaves the tier (evicted, dropped after a
    // failed read, or the tier turned off), with no lock held, on the
    // thread that dropped it. Set before the tier is shared.
    void set_drop_listener(std::function<void(index::NodeId)> listener);
    // Lets go of the cache file's lock without closing it, for a daemon that
    // exits around threads stuck in a hung backing read: they keep the
    // process's files open until the read returns, and a remount must not
    // wait for that. Nothing is written after it.
    void release_lock();

private:
    struct Core;
    explicit SsdTier(std::unique_ptr<Core> core);
    std::unique_ptr<Core> core_;
};

} // namespace clairfs::cache
