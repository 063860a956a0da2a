// SPDX-License-Identifier: MIT
// The SSD tier's state, shared by the files that implement it: open and
// restart-warm (ssd_open.cpp, ssd_restart.cpp), the space reserve
// (ssd_reserve.cpp), reads (ssd_read.cpp), writes and evictions
// (ssd_write.cpp), errors and status (ssd_health.cpp).
//
// Layout in --cache-dir, per dataset: <stem>.cache.d/ holds one file per
// entry, exactly the file's size, so that the kernel can read it itself
// (FUSE passthrough reads a backing file at the FUSE file's own offsets),
// or, for entries that share one (SsdOptions::place: a record file's
// chunks), one sparse file of the record file's size, each entry at its
// own offset;
// <stem>.cache is the reserve, preallocated to --ssd less the entries'
// extents, so a full disk shows at mount and another process filling the
// disk cannot starve the tier; <stem>.journal names what is held.
// An entry's extent is its share of the reserve: a hole punched there
// while the entry lives, allocated again when it goes. The extent's
// offset also names the entry's file.
#pragma once

#include "aio_transfer.hpp"
#include "cache_journal.hpp"
#include "clairfs/cache/ssd_tier.hpp"
#include "extent_allocator.hpp"
#include "journal_placement.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace clairfs::cache {

// What tells a changed entry file from the one checked: any write to it
// moves its change time, a replacement has another inode.
struct FileStamp {
    uint64_t ino = 0;
    int64_t ctime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};
FileStamp stamp_of(const struct stat& st);

// An entry file kept open (SsdOptions::open_files). Shared by the entry
// in `files` and the copies taken out of it, so a use that outlives the
// entry's eviction still has the file it asked for, never a descriptor
// number reused meanwhile; closed with the last copy, which the tier lets
// go without mu.
struct EntryFd {
    explicit EntryFd(int f) : fd(f) {}
    ~EntryFd();
    EntryFd(const EntryFd&) = delete;
    EntryFd& operator=(const EntryFd&) = delete;
    const int fd;
};

struct SsdEntry {
    uint64_t offset = 0; // in the cache file; the extent is aligned(size) long
    uint64_t size = 0;
    uint64_t checksum = 0; // XXH3-64 of the file's bytes
    uint64_t seq = 0;      // of the put, in the journal; tells a re-put entry from this one
    // Read back intact through the page cache, its pages not known to have
    // left it since: only then is it handed to the kernel (open_for_kernel),
    // which reads those pages without the checksum. A read from the device
    // (O_DIRECT) checks the bytes it returns, not the pages the kernel would
    // read, so it does not set this. With check_once any intact read sets
    // it, and so does the write: the device is trusted as a local copy is,
    // once it has had the bytes.
    bool verified = false;
    // The entry file as it was when verified was set (check_once): one
    // changed since (written, replaced) is not handed to the kernel again
    // before the daemon has read and checked it anew.
    FileStamp stamp;
    // An entry sharing its file (SsdOptions::place): that file's name, its
    // bytes' offset in it, and the file's size. Empty `file`: a file of
    // its own, entry_name(offset), of the entry's size.
    std::string file;
    uint64_t at = 0;
    uint64_t file_size = 0;
    // Its file, kept open once used for the kernel (entry_fd); null until
    // then, and for entries sharing a file.
    std::shared_ptr<const EntryFd> open;
};

// The entry's file's name in <stem>.cache.d, and the size it must have.
std::string file_of(const SsdEntry& e);
uint64_t file_size_of(const SsdEntry& e);

// The entry file's name in <stem>.cache.d: its extent's block number in hex.
std::string entry_name(uint64_t offset);

// The resident byte's bits.
inline constexpr uint8_t resident_held = 1, resident_verified = 2;

struct SsdTier::Core {
    explicit Core(const SsdOptions& o);
    ~Core();

    // --- Set while opening, read-only afterwards.
    DescribeFile describe;
    PlaceEntry place;
    size_t nodes = 0;
    unsigned max_io_errors = 8;
    std::string dir;
    std::string cache_name, journal_name, entries_name; // in dir
    int dir_fd = -1;
    int entries_fd = -1; // <stem>.cache.d
    uint64_t dataset_tag = 0;
    int lock_fd = -1; // the reserve's descriptor; holds the flock
    bool reserve_existed = false; // before this mount
    bool direct = false;
    bool check_once = false; // SsdOptions::check_once
    size_t max_open_files = 0; // SsdOptions::open_files
    // Whether the reserve shrinks and grows with the entries (holes are
    // punched); false where the file system cannot punch holes: then no
    // space is held beyond the entries themselves.
    std::atomic<bool> reserve_holes{true};
    StallWatch stall;
    std::function<std::unique_ptr<BlockDevice>(std::unique_ptr<BlockDevice>)> wrap_device;
    // Told of every entry that leaves the tier, on the thread that dropped
    // it, with no lock held (SsdTier::set_drop_listener).
    std::function<void(index::NodeId)> on_drop;
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
    uint64_t verified_entries = 0;             // entries with verified set
    uint64_t kept_files = 0;                   // entries with `open` set
    // Files entries share (SsdEntry::file): how many entries are in each,
    // and the file as the tier's last write into it left it.
    struct SharedFile {
        uint32_t entries = 0;
        FileStamp stamp;
    };
    std::unordered_map<std::string, SharedFile> shared;
    // Extents being read, by offset, with their reader counts; an extent
    // evicted meanwhile waits in `retired` (offset -> length) until its last
    // reader is done, so no put can overwrite bytes still being read.
    std::unordered_map<uint64_t, uint32_t> readers;
    std::unordered_map<uint64_t, uint64_t> retired;
    ExtentAllocator extents{0};
    TierStats stats;
    SsdState counters; // the counting fields; the rest is filled by state()
    uint64_t next_seq = 1;

    // The device for the entry file `fd` (owned by it): libaio, O_DIRECT
    // where the directory takes it, or buffered keeping its pages (`warm`,
    // for the kernel's reads that follow), wrapped for tests.
    std::unique_ptr<BlockDevice> device_for(int fd, bool warm);

    // ssd_read.cpp / ssd_write.cpp. `warm`: read through the page cache.
    BlobRef read(index::NodeId id, bool count, bool warm = false);
    int open_for_kernel(index::NodeId id);
    int open_whole_for_kernel(index::NodeId first, index::NodeId last);
    // The entry's file (kept open, or opened buffered and read-only by
    // name) while the entry is pinned, `use` called with it and the entry:
    // use's result, -ENOENT where the entry is not held (or is empty),
    // -EAGAIN where `verified_only` and it is not verified.
    int with_entry_file(index::NodeId id, bool verified_only,
                        const std::function<int(int fd, const SsdEntry& e)>& use);
    // The file of the pinned entry `e` (a copy taken under mu): its kept
    // descriptor, or one opened by name now and kept if the entry is still
    // the same put and there is room; null and -errno in `err`.
    std::shared_ptr<const EntryFd> entry_fd(index::NodeId id, const SsdEntry& e, int& err);
    // The kept descriptor `fd` is no longer the entry's (its file was
    // found replaced): the next use opens the file by name.
    void forget_fd(index::NodeId id, const std::shared_ptr<const EntryFd>& fd);
    // read()'s steps: the entry pinned under mu (false: a miss), its bytes
    // read without mu (0 or -errno), the read counted and the entry unpinned
    // (and dropped if the read failed: true and the drop's seq), and the
    // failure told.
    bool pin_entry(index::NodeId id, bool count, SsdEntry& e);
    int read_entry(const SsdEntry& e, std::shared_ptr<Blob>& blob, bool warm, FileStamp& stamp);
    // The entry's pages left the page cache (dropped, or found gone at an
    // open): the kernel's next read of it would come from the device
    // unchecked, so it is not the kernel's until read and checked again.
    void unverify(index::NodeId id, const SsdEntry& e);
    bool settle_read(index::NodeId id, const SsdEntry& e, bool count, bool intact, bool paged,
                     const FileStamp& stamp, int rv, uint64_t& seq);
    // Under mu: the entry `it` verified, as its file is now.
    void mark_verified(index::NodeId id, SsdEntry& e, const FileStamp& stamp);
    void read_failed(index::NodeId id, const SsdEntry& e, int rv, bool dropped, uint64_t seq);
    bool write(index::NodeId id, const BlobRef& blob);
    // Sets e.stamp: the file as written.
    int store_entry(SsdEntry& e, const Blob& blob);
    // write()'s steps under mu: an extent reserved for `id` (or it is held
    // or being written already, or there is no room), and after the write
    // the entry published (true) or its extent given back.
    enum class Reservation { made, held, refused };
    Reservation reserve_extent(index::NodeId id, uint64_t size, uint64_t& offset);
    bool publish(index::NodeId id, int rv, SsdEntry& e);
    uint64_t drop(index::NodeId id);
    // After remove_locked, without mu: the entry's file unlinked, its
    // extent back in the reserve and then free, and on_drop told. An
    // entry sharing its file takes every other entry of that file with
    // it: the file is unlinked whole, never cut into, so that a kernel
    // reading it (passthrough) keeps the bytes it was given.
    void retire(index::NodeId id, const SsdEntry& e);
    void retire_one(index::NodeId id, const SsdEntry& e, bool unlink);
    // The entry's place in a shared file, from SsdOptions::place; false
    // (and e untouched) for an entry with a file of its own.
    bool place_of(index::NodeId id, SsdEntry& e) const;
    // store_entry() for an entry sharing its file.
    int store_shared(SsdEntry& e, const Blob& blob);
    // The entry's last partial block, through the page cache (ssd_write.cpp).
    int write_tail(int fd, const Blob& blob, uint64_t head, uint64_t at);

    // ssd_reserve.cpp: the reserve's blocks taken for an entry's file, or
    // given back; best effort (a failure costs the reserve's guarantee,
    // not bytes). reserve_room fills every free extent at open: "" or why not.
    void take_reserve(uint64_t offset, uint64_t size);
    void give_reserve(uint64_t offset, uint64_t size);
    std::string reserve_room();

    // Under mu: extent bookkeeping.
    void pin(const SsdEntry& e);
    void unpin(const SsdEntry& e);
    void free_extent(const SsdEntry& e);
    // Under mu: removes a held entry, its extent kept until retire();
    // false if `id` is not held.
    bool remove_locked(index::NodeId id, SsdEntry& out);
    void set_resident(index::NodeId id, bool held, bool verified = false);

    // ssd_health.cpp. Counts a failure and logs `line`; a device error
    // (`io`) counts toward max_io_errors, after which the tier turns off.
    // Takes mu itself: call without it.
    void fail(bool io, const std::string& line);
    // Turns the tier off: logs `reason` once, forgets every entry.
    void disable(const std::string& reason);
    // Appends a journal record for an evicted or dropped entry.
    void journal_evict(index::NodeId id, uint64_t seq);
    void journal_failed(int rv);
    std::string where(uint64_t size, uint64_t off) const; // for messages
    std::string where(const SsdEntry& e) const;

    // ssd_open.cpp / ssd_restart.cpp. open_files returns "" or the one-line
    // reason the tier stays off.
    std::string open_files(const SsdOptions& o, bool& existed);
    std::string open_entries_dir(); // "" or why not
    // Sets dataset_tag and the names of the cache file and the journal.
    void name_files(const std::string& dataset);
    // The opened cache file `fd` becomes the tier's device of `capacity`.
    void attach_device(const SsdOptions& o, int fd, uint64_t capacity);
    void restart_warm(bool existed);
    // restart_warm()'s steps: the previous mount's journal folded, the
    // entries kept taken into `files` (their records returned), and the
    // journal rewritten with just those.
    void read_journal(JournalFold& fold);
    // Entries whose file is missing or of another size are discarded;
    // every other file in the entries directory (foreign, or left by a
    // crash) is removed, so nothing there is served unless journalled.
    uint64_t check_entry_files(JournalEntries& keep);
    std::vector<JournalRecord> adopt(JournalEntries& keep);
    void rewrite_journal(const std::vector<JournalRecord>& records);
    void close();
};

// The journal record of a stored entry of `file`.
JournalRecord put_record(const SsdEntry& e, FileIdentity&& file);

// "4.0 GiB", for messages.
std::string human_bytes(uint64_t n);

} // namespace clairfs::cache
