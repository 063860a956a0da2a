// SPDX-License-Identifier: MIT
// Writes to the SSD tier: reserve an extent under the lock, write the
// entry's file without it (the extent's blocks taken from the reserve
// first), then publish the entry under it and journal it. An entry is
// never visible before its bytes are on the device, and a journal record
// never precedes its data write (durability across a crash is the
// checksum's job: see ssd_restart.cpp).
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <new>
#include <xxhash.h>

namespace clairfs::cache {
namespace {

// O_DIRECT needs an aligned buffer of whole blocks with a deterministic
// tail; a blob from Blob::make is one, any other is copied. `len` bytes of
// it, a multiple of the block size.
int write_blocks(BlockDevice& dev, const Blob& b, uint64_t len, uint64_t offset) {
    auto addr = reinterpret_cast<uintptr_t>(b.bytes.get());
    if (b.capacity >= len && addr % Blob::alignment == 0)
        return dev.write(b.bytes.get(), len, offset);
    std::shared_ptr<Blob> copy;
    try {
        copy = Blob::make(b.size);
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    }
    std::memcpy(copy->bytes.get(), b.bytes.get(), b.size);
    return dev.write(copy->bytes.get(), len, offset);
}

// The whole blocks of the entry before its last partial one.
uint64_t whole_blocks(uint64_t size) {
    return size / Blob::alignment * Blob::alignment;
}

} // namespace

JournalRecord put_record(const SsdEntry& e, FileIdentity&& file) {
    JournalRecord r;
    r.kind = JournalRecord::Kind::put;
    r.seq = e.seq;
    r.path = std::move(file.path);
    r.offset = e.offset;
    r.size = e.size;
    r.mtime_ns = file.mtime_ns;
    r.checksum = e.checksum;
    return r;
}

bool SsdTier::Core::write(index::NodeId id, const BlobRef& blob) {
    if (!blob || !enabled.load()) return false;
    FileIdentity file;
    if (!describe(id, file)) return false;
    uint64_t offset;
    switch (reserve_extent(id, blob->size, offset)) {
    case Reservation::refused: return false;
    case Reservation::held: return true;
    case Reservation::made: break;
    }
    SsdEntry e{offset, blob->size, XXH3_64bits(blob->bytes.get(), blob->size), 0, false, {},
               {}, 0, 0, {}};
    place_of(id, e);
    int rv = e.size > 0 ? (e.file.empty() ? store_entry(e, *blob) : store_shared(e, *blob)) : 0;
    if (publish(id, rv, e)) {
        if (!journal.failed()) {
            int jrv = journal.append(put_record(e, std::move(file)));
            if (jrv < 0 && jrv != -EBADF) journal_failed(jrv);
        }
        return true;
    }
    // Stored but not published (the shared file was retired meanwhile):
    // its blocks are back in the reserve's keeping.
    if (rv == 0 && e.size > 0 && !e.file.empty()) give_reserve(e.offset, e.size);
    if (rv < 0)
        fail(rv != -ENOMEM, "ssd tier: write of " + where(e) +
                                " failed: " + sys::error_text(rv));
    return false;
}

// The file is written whole blocks at a time (O_DIRECT), then its last
// partial block through the page cache (write_tail), so that it ends at the
// entry's size, which is what the kernel reads to when it reads it itself.
// A failed write leaves no file and gives the blocks back.
int SsdTier::Core::store_entry(SsdEntry& e, const Blob& blob) {
    take_reserve(e.offset, e.size);
    const std::string name = entry_name(e.offset);
    int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | (direct ? O_DIRECT : 0);
    int fd = sys::neg_errno(::openat(entries_fd, name.c_str(), flags, 0600));
    int rv = fd;
    if (fd >= 0) {
        // The device owns `fd`; the tail and the fstat need a descriptor
        // after it.
        int cut = sys::neg_errno(::dup(fd));
        if (cut < 0) sys::close(fd);
        const uint64_t head = whole_blocks(e.size);
        rv = cut < 0 ? cut : head > 0 ? write_blocks(*device_for(fd, false), blob, head, 0) : 0;
        if (cut >= 0 && head == 0) sys::close(fd);
        if (rv == 0) rv = write_tail(cut, blob, head, 0);
        struct stat st;
        if (rv == 0) rv = sys::fstat(cut, &st);
        if (rv == 0) e.stamp = stamp_of(st);
        if (cut >= 0) sys::close(cut);
    }
    if (rv < 0) {
        ::unlinkat(entries_fd, name.c_str(), 0);
        give_reserve(e.offset, e.size);
    }
    return rv;
}

bool SsdTier::Core::place_of(index::NodeId id, SsdEntry& e) const {
    SharedPlace p;
    if (!place || !place(id, p) || p.file.empty() || p.offset % Blob::alignment != 0 ||
        p.offset + e.size > p.file_size)
        return false;
    e.file = std::move(p.file);
    e.at = p.offset;
    e.file_size = p.file_size;
    return true;
}

// Written at the entry's own offset into the shared file, which is made
// (sparse, of the record file's size) by the first of its entries. An
// entry whose whole blocks would run past the file's end (its last) writes
// its last partial block through the page cache (write_tail) instead, so
// no write changes the file's size and none can cut another entry's
// bytes. A failed write leaves its range unvouched for: no entry names it,
// and the file is handed to the kernel only once every entry is there.
int SsdTier::Core::store_shared(SsdEntry& e, const Blob& blob) {
    take_reserve(e.offset, e.size);
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (direct ? O_DIRECT : 0);
    int fd = sys::neg_errno(::openat(entries_fd, e.file.c_str(), flags, 0600));
    int rv = fd;
    if (fd >= 0) {
        int cut = sys::neg_errno(::dup(fd));
        if (cut < 0) sys::close(fd);
        struct stat st;
        rv = cut < 0 ? cut : sys::fstat(cut, &st);
        if (rv == 0 && static_cast<uint64_t>(st.st_size) != e.file_size)
            rv = sys::neg_errno(::ftruncate(cut, static_cast<off_t>(e.file_size)));
        const bool last = e.at + ExtentAllocator::aligned(e.size) > e.file_size;
        const uint64_t head = last ? whole_blocks(e.size) : ExtentAllocator::aligned(e.size);
        if (rv == 0 && head > 0) rv = write_blocks(*device_for(fd, false), blob, head, e.at);
        else if (cut >= 0) sys::close(fd);
        if (rv == 0 && last) rv = write_tail(cut, blob, head, e.at);
        if (rv == 0) rv = sys::fstat(cut, &st);
        if (rv == 0) e.stamp = stamp_of(st);
        if (cut >= 0) sys::close(cut);
    }
    if (rv < 0) give_reserve(e.offset, e.size);
    return rv;
}

// The bytes of `blob` from `head` (a block boundary) to its end, written at
// `at + head` through the page cache. Cutting a file written in whole
// blocks back to a size inside its last block would make ext4 read that
// block back, synchronously, to zero its end: 92 us of a 250 us store of a
// 110 KB entry, measured. The page's writeback is started at once, so a
// later drop-behind finds it clean, not waiting to be written.
int SsdTier::Core::write_tail(int fd, const Blob& blob, uint64_t head, uint64_t at) {
    if (head >= blob.size) return 0;
    int t = sys::neg_errno(::dup(fd));
    if (t < 0) return t;
    int fl = ::fcntl(t, F_GETFL);
    // The dup shares the file description, written O_DIRECT a moment ago;
    // nothing else uses it now.
    if (fl < 0 || (fl & O_DIRECT && ::fcntl(t, F_SETFL, fl & ~O_DIRECT) < 0)) {
        int rv = -errno;
        sys::close(t);
        return rv;
    }
    const uint64_t off = at + head;
    int rv = device_for(t, true)->write(blob.bytes.get() + head, blob.size - head, off);
    if (rv == 0)
        (void)::sync_file_range(fd, static_cast<off_t>(off), static_cast<off_t>(blob.size - head),
                                SYNC_FILE_RANGE_WRITE);
    return rv;
}

SsdTier::Core::Reservation SsdTier::Core::reserve_extent(index::NodeId id, uint64_t size,
                                                         uint64_t& offset) {
    std::lock_guard lk(mu);
    if (!enabled.load()) return Reservation::refused;
    if (files.contains(id) || writing.contains(id)) return Reservation::held;
    auto got = extents.allocate(size);
    if (!got) {
        ++stats.rejected;
        return Reservation::refused;
    }
    offset = *got;
    writing.insert(id);
    return Reservation::made;
}

bool SsdTier::Core::publish(index::NodeId id, int rv, SsdEntry& e) {
    std::lock_guard lk(mu);
    writing.erase(id);
    // A write into a shared file that a retire unlinked meanwhile went to
    // another inode than the file's other entries: not published, or the
    // file would count as whole without this entry's bytes in it.
    if (rv == 0 && !e.file.empty()) {
        auto sf = shared.find(e.file);
        if (sf != shared.end() && sf->second.entries > 0 && sf->second.stamp.ino != e.stamp.ino)
            rv = -ESTALE;
    }
    if (rv == 0 && enabled.load()) {
        e.seq = next_seq++;
        auto [it, added] = files.emplace(id, e);
        set_resident(id, true);
        if (!e.file.empty()) {
            SharedFile& sf = shared[e.file];
            ++sf.entries;
            // Writes into one file publish out of order: the newest change
            // time is the file as the tier left it.
            if (sf.stamp.ino != e.stamp.ino || sf.stamp.ctime_ns < e.stamp.ctime_ns)
                sf.stamp = e.stamp;
        }
        // Its bytes were checked as they went to the device: trusted from
        // here on with check_once, as a local copy is once written.
        if (check_once && e.size > 0) mark_verified(id, it->second, e.stamp);
        stats.bytes += e.size;
        stats.entries = files.size();
        ++counters.writes;
        counters.bytes_written += e.size;
        return true;
    }
    if (e.size > 0) extents.release(e.offset, e.size);
    return false;
}

uint64_t SsdTier::Core::drop(index::NodeId id) {
    SsdEntry e;
    uint64_t seq;
    {
        std::lock_guard lk(mu);
        if (!remove_locked(id, e)) return 0;
        ++stats.evictions;
        seq = next_seq++;
    }
    journal_evict(id, seq);
    retire(id, e);
    return e.size;
}

// Unlinked, never overwritten: a descriptor the kernel holds (a backing
// file of an open passed through) keeps the entry's bytes to its close.
void SsdTier::Core::retire(index::NodeId id, const SsdEntry& e) {
    if (e.file.empty()) return retire_one(id, e, true);
    std::vector<std::pair<index::NodeId, SsdEntry>> others;
    std::vector<uint64_t> seqs;
    {
        std::lock_guard lk(mu);
        std::vector<index::NodeId> ids;
        for (const auto& [other, oe] : files)
            if (oe.file == e.file) ids.push_back(other);
        for (index::NodeId other : ids) {
            SsdEntry oe;
            if (!remove_locked(other, oe)) continue;
            others.emplace_back(other, std::move(oe));
            seqs.push_back(next_seq++);
        }
        shared.erase(e.file);
    }
    for (size_t i = 0; i < others.size(); ++i) journal_evict(others[i].first, seqs[i]);
    ::unlinkat(entries_fd, e.file.c_str(), 0);
    retire_one(id, e, false);
    for (const auto& [other, oe] : others) retire_one(other, oe, false);
}

void SsdTier::Core::retire_one(index::NodeId id, const SsdEntry& e, bool unlink) {
    if (e.size > 0) {
        if (unlink) ::unlinkat(entries_fd, entry_name(e.offset).c_str(), 0);
        give_reserve(e.offset, e.size);
    }
    {
        std::lock_guard lk(mu);
        free_extent(e);
    }
    if (on_drop) on_drop(id);
}

bool SsdTier::put(index::NodeId id, BlobRef blob) {
    return core_->write(id, blob);
}

uint64_t SsdTier::evict(index::NodeId id) {
    return core_->drop(id);
}

} // namespace clairfs::cache
