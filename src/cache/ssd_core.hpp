// SPDX-License-Identifier: MIT
// The SSD tier's state, shared by the files that implement it: open and
// restart-warm (ssd_open.cpp, ssd_restart.cpp), reads (ssd_read.cpp),
// writes and evictions (ssd_write.cpp), errors and status (ssd_health.cpp).
#pragma once

#include "cache_journal.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "extent_allocator.hpp"
#include "journal_placement.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace clairfs::cache {

struct SsdEntry {
    uint64_t offset = 0; // in the cache file; the extent is aligned(size) long
    uint64_t size = 0;
    uint64_t checksum = 0; // XXH3-64 of the file's bytes
    uint64_t seq = 0;      // of the put, in the journal; tells a re-put entry from this one
};

struct SsdTier::Core {
    explicit Core(const SsdOptions& o);
    ~Core();

    // --- Set while opening, read-only afterwards.
    DescribeFile describe;
    size_t nodes = 0;
    unsigned max_io_errors = 8;
    std::string dir;
    std::string cache_name, journal_name; // in dir
    int dir_fd = -1;
    uint64_t dataset_tag = 0;
    std::unique_ptr<BlockDevice> device;
    int lock_fd = -1; // the cache file's descriptor that holds the flock (the device owns it)
    bool direct = false;
    JournalAppender journal;
    // One byte per node, written under mu with files and read without it,
    // as RamTier does: the scheduler asks contains() for thousands of files.
    std::unique_ptr<std::atomic<uint8_t>[]> resident;
    std::atomic<bool> enabled{false};

    // Lock order: leaf. Guards everything below and is never held across
    // device or journal I/O.
    mutable std::mutex mu;
    std::unordered_map<index::NodeId, SsdEntry> files;
    std::unordered_set<index::NodeId> writing; // extents reserved, bytes on their way
    // Extents being read, by offset, with their reader counts; an extent
    // evicted meanwhile waits in `retired` (offset -> length) until its last
    // reader is done, so no put can overwrite bytes still being read.
    std::unordered_map<uint64_t, uint32_t> readers;
    std::unordered_map<uint64_t, uint64_t> retired;
    ExtentAllocator extents{0};
    TierStats stats;
    SsdState counters; // the counting fields; the rest is filled by state()
    uint64_t next_seq = 1;

    // ssd_read.cpp / ssd_write.cpp
    BlobRef read(index::NodeId id, bool count);
    // read()'s steps: the entry pinned under mu (false: a miss), its bytes
    // read without mu (0 or -errno), the read counted and the entry unpinned
    // (and dropped if the read failed: true and the drop's seq), and the
    // failure told.
    bool pin_entry(index::NodeId id, bool count, SsdEntry& e);
    int read_entry(const SsdEntry& e, std::shared_ptr<Blob>& blob);
    bool settle_read(index::NodeId id, const SsdEntry& e, bool count, bool intact, int rv,
                     uint64_t& seq);
    void read_failed(index::NodeId id, const SsdEntry& e, int rv, bool dropped, uint64_t seq);
    bool write(index::NodeId id, const BlobRef& blob);
    // write()'s steps under mu: an extent reserved for `id` (or it is held
    // or being written already, or there is no room), and after the write
    // the entry published (true) or its extent given back.
    enum class Reservation { made, held, refused };
    Reservation reserve_extent(index::NodeId id, uint64_t size, uint64_t& offset);
    bool publish(index::NodeId id, int rv, SsdEntry& e);
    uint64_t drop(index::NodeId id);

    // Under mu: extent bookkeeping.
    void pin(const SsdEntry& e);
    void unpin(const SsdEntry& e);
    void free_extent(const SsdEntry& e);
    // Under mu: removes a held entry; false if `id` is not held.
    bool remove_locked(index::NodeId id, SsdEntry& out);
    void set_resident(index::NodeId id, bool held);

    // ssd_health.cpp. Counts a failure and logs `line`; a device error
    // (`io`) counts toward max_io_errors, after which the tier turns off.
    // Takes mu itself: call without it.
    void fail(bool io, const std::string& line);
    // Turns the tier off: logs `reason` once, forgets every entry.
    void disable(const std::string& reason);
    // Appends a journal record for an evicted or dropped entry.
    void journal_evict(index::NodeId id, uint64_t seq);
    void journal_failed(int rv);
    std::string where(uint64_t len, uint64_t off) const; // for messages

    // ssd_open.cpp / ssd_restart.cpp. open_files returns "" or the one-line
    // reason the tier stays off.
    std::string open_files(const SsdOptions& o, bool& existed);
    // Sets dataset_tag and the names of the cache file and the journal.
    void name_files(const std::string& dataset);
    // The opened cache file `fd` becomes the tier's device of `capacity`.
    void attach_device(const SsdOptions& o, int fd, uint64_t capacity);
    void restart_warm(bool existed);
    // restart_warm()'s steps: the previous mount's journal folded, the
    // entries kept taken into `files` (their records returned), and the
    // journal rewritten with just those.
    void read_journal(JournalFold& fold);
    std::vector<JournalRecord> adopt(JournalEntries& keep);
    void rewrite_journal(const std::vector<JournalRecord>& records);
    void close();
};

// The journal record of a stored entry of `file`.
JournalRecord put_record(const SsdEntry& e, FileIdentity&& file);

// "4.0 GiB", for messages.
std::string human_bytes(uint64_t n);

} // namespace clairfs::cache
