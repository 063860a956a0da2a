// SPDX-License-Identifier: MIT
// Reads from the SSD tier: look the entry up and pin its extent under the
// lock, open and read its file and verify without it, then unpin. The pin
// keeps the extent, and so the file's name, from being given to another
// entry meanwhile: a reader whose entry was evicted finds no file, never
// another file's bytes.
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <xxhash.h>

namespace clairfs::cache {

std::string entry_name(uint64_t offset) {
    char name[24];
    std::snprintf(name, sizeof name, "%012" PRIx64, offset / Blob::alignment);
    return name;
}

std::string file_of(const SsdEntry& e) {
    return e.file.empty() ? entry_name(e.offset) : e.file;
}

uint64_t file_size_of(const SsdEntry& e) {
    return e.file.empty() ? e.size : e.file_size;
}

void SsdTier::Core::pin(const SsdEntry& e) {
    if (e.size > 0) ++readers[e.offset];
}

void SsdTier::Core::unpin(const SsdEntry& e) {
    if (e.size == 0) return;
    auto it = readers.find(e.offset);
    if (--it->second > 0) return;
    readers.erase(it);
    if (auto r = retired.find(e.offset); r != retired.end()) {
        extents.release(e.offset, r->second);
        retired.erase(r);
    }
}

void SsdTier::Core::free_extent(const SsdEntry& e) {
    if (e.size == 0) return;
    if (readers.contains(e.offset))
        retired.emplace(e.offset, e.size);
    else
        extents.release(e.offset, e.size);
}

void SsdTier::Core::set_resident(index::NodeId id, bool held, bool verified) {
    if (id < nodes)
        resident[id].store(held ? resident_held | (verified ? resident_verified : 0) : 0,
                           std::memory_order_release);
}

bool SsdTier::Core::remove_locked(index::NodeId id, SsdEntry& out) {
    auto it = files.find(id);
    if (it == files.end()) return false;
    out = std::move(it->second); // a kept file closes with `out`, after mu
    files.erase(it);
    if (out.open) --kept_files;
    if (!out.file.empty()) {
        auto sf = shared.find(out.file);
        if (sf != shared.end() && sf->second.entries > 0) --sf->second.entries;
    }
    set_resident(id, false);
    if (out.verified) --verified_entries;
    stats.bytes -= out.size;
    stats.entries = files.size();
    return true;
}

BlobRef SsdTier::Core::read(index::NodeId id, bool count, bool warm) {
    SsdEntry e;
    if (!pin_entry(id, count, e)) return nullptr;
    std::shared_ptr<Blob> blob;
    FileStamp stamp;
    int rv = read_entry(e, blob, warm, stamp);
    bool intact = rv == 0 && XXH3_64bits(blob->bytes.get(), e.size) == e.checksum;
    uint64_t seq = 0;
    bool dropped = settle_read(id, e, count, intact, warm || !direct, stamp, rv, seq);
    if (intact) return blob;
    read_failed(id, e, rv, dropped, seq);
    if (dropped) retire(id, e);
    return nullptr;
}

bool SsdTier::Core::pin_entry(index::NodeId id, bool count, SsdEntry& e) {
    std::lock_guard lk(mu);
    auto it = enabled.load() ? files.find(id) : files.end();
    if (it == files.end()) {
        if (count) ++stats.misses;
        return false;
    }
    e = it->second;
    pin(e);
    return true;
}

// 0, or -errno: -ENOENT where the file is gone (evicted meanwhile, or
// removed by hand), -EBADMSG where it is not the entry's size.
int SsdTier::Core::read_entry(const SsdEntry& e, std::shared_ptr<Blob>& blob, bool warm,
                              FileStamp& stamp) {
    try {
        blob = Blob::make(e.size);
    } catch (const std::bad_alloc&) {
        return -ENOMEM;
    }
    if (e.size == 0) return 0;
    const std::string name = file_of(e);
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (direct && !warm ? O_DIRECT : 0);
    int fd = sys::neg_errno(::openat(entries_fd, name.c_str(), flags));
    if (fd < 0) return fd;
    struct stat st;
    if (sys::fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) != file_size_of(e)) {
        sys::close(fd);
        return -EBADMSG;
    }
    stamp = stamp_of(st);
    return device_for(fd, warm)->read(blob->bytes.get(), ExtentAllocator::aligned(e.size), e.at);
}

FileStamp stamp_of(const struct stat& st) {
    return {static_cast<uint64_t>(st.st_ino),
            static_cast<int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
}

void SsdTier::Core::mark_verified(index::NodeId id, SsdEntry& e, const FileStamp& stamp) {
    e.stamp = stamp;
    if (e.verified) return;
    e.verified = true;
    ++verified_entries;
    set_resident(id, true, true);
}

// A failed or corrupt read drops the entry, unless it was already evicted
// and put again (another seq) while this read ran. An intact one through
// the page cache (`paged`) marks it verified: the kernel may read those
// pages itself while they stay. With check_once any intact read does: the
// device's bytes were checked, and are trusted from then on.
bool SsdTier::Core::settle_read(index::NodeId id, const SsdEntry& e, bool count, bool intact,
                                bool paged, const FileStamp& stamp, int rv, uint64_t& seq) {
    SsdEntry dropped;
    bool drop = false;
    std::lock_guard lk(mu);
    unpin(e);
    auto it = files.find(id);
    const bool current = it != files.end() && it->second.seq == e.seq;
    if (count) ++(intact ? stats.hits : stats.misses);
    if (intact) {
        ++counters.reads;
        counters.bytes_read += e.size;
        if (current && (paged || check_once) && e.size > 0) mark_verified(id, it->second, stamp);
    } else if (rv != -ENOMEM && current) {
        drop = remove_locked(id, dropped);
        if (drop) seq = next_seq++;
    }
    return drop;
}

void SsdTier::Core::read_failed(index::NodeId id, const SsdEntry& e, int rv, bool dropped,
                                uint64_t seq) {
    if (rv == -ENOMEM) {
        LOG_WARN("ssd tier: no memory for a %s file (node %u)", human_bytes(e.size).c_str(), id);
        return;
    }
    // Its file went with an eviction that raced this read: a miss. A bad
    // copy another read of the same entry dropped first (a prefetch's check
    // racing an open's) was counted by that read: one error per bad entry,
    // each followed by one refetch.
    if (!dropped && (rv == -ENOENT || rv == 0 || rv == -EBADMSG)) return;
    if (dropped) journal_evict(id, seq);
    if (rv == -ENOENT || rv == -EBADMSG)
        fail(false, "ssd tier: the file of node " + std::to_string(id) + " (" +
                        where(e) + ") is " +
                        (rv == -ENOENT ? "missing" : "not its size") + "; entry dropped");
    else if (rv < 0)
        fail(true, "ssd tier: read of " + where(e) + " failed: " +
                       sys::error_text(rv) + "; entry dropped");
    else
        fail(false, "ssd tier: checksum mismatch for node " + std::to_string(id) + " (" +
                        where(e) + "); entry dropped, not served");
}

void SsdTier::Core::unverify(index::NodeId id, const SsdEntry& e) {
    std::lock_guard lk(mu);
    auto it = files.find(id);
    if (it == files.end() || it->second.seq != e.seq || !it->second.verified) return;
    it->second.verified = false;
    --verified_entries;
    set_resident(id, true, false);
}

EntryFd::~EntryFd() {
    sys::close(fd);
}

std::shared_ptr<const EntryFd> SsdTier::Core::entry_fd(index::NodeId id, const SsdEntry& e,
                                                       int& err) {
    if (e.open) return e.open;
    // Buffered: the kernel reads it for the job, through its page cache.
    int fd = sys::neg_errno(
        ::openat(entries_fd, file_of(e).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0) {
        err = fd;
        return nullptr;
    }
    auto ref = std::make_shared<const EntryFd>(fd);
    if (!e.file.empty()) return ref; // a shared file: one entry of many
    std::lock_guard lk(mu);
    auto it = files.find(id);
    if (it != files.end() && it->second.seq == e.seq && !it->second.open &&
        kept_files < max_open_files) {
        it->second.open = ref;
        ++kept_files;
    }
    return ref;
}

void SsdTier::Core::forget_fd(index::NodeId id, const std::shared_ptr<const EntryFd>& fd) {
    std::lock_guard lk(mu);
    auto it = files.find(id);
    if (it == files.end() || !fd || it->second.open != fd) return;
    it->second.open.reset(); // `fd` still holds it: not closed under mu
    --kept_files;
}

int SsdTier::Core::open_for_kernel(index::NodeId id) {
    SsdEntry e;
    {
        std::lock_guard lk(mu);
        auto it = enabled.load() ? files.find(id) : files.end();
        if (it == files.end() || it->second.size == 0 || !it->second.file.empty())
            return -ENOENT;
        if (!it->second.verified) return -EAGAIN;
        e = it->second;
        pin(e);
    }
    int fd = 0;
    bool changed = false;
    if (std::shared_ptr<const EntryFd> file = entry_fd(id, e, fd)) {
        struct stat st;
        if (sys::fstat(file->fd, &st) < 0 || static_cast<uint64_t>(st.st_size) != e.size) {
            fd = -EBADMSG;
        } else if ((check_once && stamp_of(st) != e.stamp) ||
                   (e.stamp.ino != 0 && stamp_of(st).ino != e.stamp.ino)) {
            // Written to or replaced since its check (by hand: the tier
            // never rewrites a file), or a kept file the name no longer
            // leads to: the daemon reads and checks it again first.
            fd = -EAGAIN;
            changed = true;
        } else if (!check_once && sys::all_pages_cached(file->fd, e.size) != 1) {
            // The checked pages must all still be there: one that left
            // (reclaim, drop_caches) the kernel would read again from the
            // device, and the device's bytes are checked only by the
            // daemon's reads. Pages evicted during the open itself are
            // beyond this check (see clairfs(8)). Not with check_once,
            // which trusts the device once it has been checked.
            fd = -ENODATA;
        } else {
            // The caller's own descriptor of the kept file: a dup costs
            // less than an open by name.
            fd = sys::neg_errno(::fcntl(file->fd, F_DUPFD_CLOEXEC, 0));
        }
        // A kept file found not the checked one (replaced by hand, or cut)
        // is let go: the daemon's next read, and the next open, go by name.
        if (fd == -EBADMSG || changed) forget_fd(id, file);
    }
    {
        std::lock_guard lk(mu);
        unpin(e);
    }
    if (fd == -ENODATA || changed) unverify(id, e);
    // A file changed behind the tier's back since it was verified: the
    // daemon's next read of it drops it.
    return fd == -EBADMSG ? -EAGAIN : fd;
}

// Checked under mu before the file is opened and again after its fstat:
// a retire in between (which unlinks a shared file whole) leaves a later
// file of that name, with another inode or change time, or with entries
// missing, and it is not handed over.
int SsdTier::Core::open_whole_for_kernel(index::NodeId first, index::NodeId last) {
    std::string name;
    uint64_t size = 0;
    FileStamp stamp;
    auto whole = [&](std::string& file) {
        if (!enabled.load()) return -ENOENT;
        for (index::NodeId id = first; id <= last; ++id) {
            auto it = files.find(id);
            if (it == files.end() || it->second.file.empty()) return -ENOENT;
            if (id == first) file = it->second.file;
            if (it->second.file != file) return -ENOENT;
            if (!it->second.verified) return -EAGAIN;
        }
        auto sf = shared.find(file);
        if (sf == shared.end() || sf->second.entries != last - first + 1) return -ENOENT;
        stamp = sf->second.stamp;
        size = files.find(first)->second.file_size;
        return 0;
    };
    {
        std::lock_guard lk(mu);
        if (int rv = whole(name); rv < 0) return rv;
    }
    int fd = sys::neg_errno(
        ::openat(entries_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0) return fd == -ENOENT ? -ENOENT : -EAGAIN;
    struct stat st;
    int rv = sys::fstat(fd, &st);
    if (rv == 0 && (static_cast<uint64_t>(st.st_size) != size || stamp_of(st).ino != stamp.ino))
        rv = -EAGAIN;
    // As open_for_kernel: trusted once checked, or only while every page
    // the checks read is still cached.
    if (rv == 0 && check_once && stamp_of(st) != stamp) rv = -EAGAIN;
    if (rv == 0 && !check_once && sys::all_pages_cached(fd, size) != 1) rv = -ENODATA;
    if (rv == 0) {
        std::lock_guard lk(mu);
        FileStamp before = stamp;
        std::string again;
        rv = whole(again);
        if (rv == 0 && (again != name || stamp != before)) rv = -EAGAIN;
    }
    if (rv < 0) {
        sys::close(fd);
        return rv == -ENOENT ? -ENOENT : -EAGAIN;
    }
    return fd;
}

int SsdTier::Core::with_entry_file(index::NodeId id, bool verified_only,
                                   const std::function<int(int fd, const SsdEntry& e)>& use) {
    SsdEntry e;
    {
        std::lock_guard lk(mu);
        auto it = enabled.load() ? files.find(id) : files.end();
        if (it == files.end() || it->second.size == 0) return -ENOENT;
        if (verified_only && !it->second.verified) return -EAGAIN;
        e = it->second;
        pin(e); // its name is not another entry's meanwhile
    }
    int rv = 0;
    if (std::shared_ptr<const EntryFd> file = entry_fd(id, e, rv)) rv = use(file->fd, e);
    std::lock_guard lk(mu);
    unpin(e);
    return rv;
}

BlobRef SsdTier::get(index::NodeId id) {
    return core_->read(id, true);
}

BlobRef SsdTier::peek(index::NodeId id) const {
    return core_->read(id, false);
}

BlobRef SsdTier::warm(index::NodeId id, bool count) {
    return core_->read(id, count, true);
}

void SsdTier::served_by_kernel() {
    std::lock_guard lk(core_->mu);
    ++core_->stats.hits;
}

bool SsdTier::verified(index::NodeId id) const {
    if (id < core_->nodes)
        return core_->resident[id].load(std::memory_order_acquire) & resident_verified;
    std::lock_guard lk(core_->mu);
    auto it = core_->files.find(id);
    return it != core_->files.end() && it->second.verified;
}

int SsdTier::open_for_kernel(index::NodeId id) {
    return core_->open_for_kernel(id);
}

int SsdTier::open_whole_for_kernel(index::NodeId first, index::NodeId last) {
    return core_->open_whole_for_kernel(first, last);
}

int SsdTier::drop_pages(index::NodeId id) {
    SsdEntry dropped;
    int rv = core_->with_entry_file(id, false, [&](int fd, const SsdEntry& e) {
        dropped = e;
        return -::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    });
    // Its next use reads and checks it again (a prefetch's warm), unless
    // the device is trusted once checked.
    if (rv != -ENOENT && !core_->check_once) core_->unverify(id, dropped);
    return rv;
}

int SsdTier::read_ahead(index::NodeId id) {
    return core_->with_entry_file(id, true, [](int fd, const SsdEntry& e) {
        return -::posix_fadvise(fd, static_cast<off_t>(e.at), static_cast<off_t>(e.size),
                                POSIX_FADV_WILLNEED);
    });
}

bool SsdTier::checks_once() const {
    return core_->check_once;
}

void SsdTier::set_drop_listener(std::function<void(index::NodeId)> listener) {
    core_->on_drop = std::move(listener);
}

bool SsdTier::contains(index::NodeId id) const {
    if (id < core_->nodes) return core_->resident[id].load(std::memory_order_acquire) != 0;
    std::lock_guard lk(core_->mu);
    return core_->files.contains(id);
}

void SsdTier::held(std::vector<index::NodeId>& out) const {
    std::lock_guard lk(core_->mu);
    out.reserve(out.size() + core_->files.size());
    for (const auto& [id, e] : core_->files) out.push_back(id);
}

} // namespace clairfs::cache
