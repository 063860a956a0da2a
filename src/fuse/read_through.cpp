// SPDX-License-Identifier: MIT
// READs of files the tiers do not take (too large, or --mem 0): each range
// is read from the backing store as asked. The open and the read run as one
// bounded call (sys::BoundedCalls), so a hung backing store answers this
// READ with EIO after --io-timeout while the FUSE thread serves on.
#include "backing_file.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "read_through.hpp"

#include <fcntl.h>
#include <memory>

namespace clairfs::fuse {
namespace {

// One range read, shared by the FUSE thread and the call: whichever lets go
// last frees it, so a call that outlives its READ writes into its own buffer
// and closes its own descriptor.
struct RangeRead {
    cache::BackingStore* store = nullptr;
    const index::Node* node = nullptr;
    int fd = -1;         // a duplicate of the open's descriptor, or opened by run()
    bool opened = false; // run() opened fd: the open may keep it
    std::shared_ptr<char[]> buf;
    size_t size = 0;
    off_t off = 0;
    ssize_t got = 0; // bytes read, or -errno

    void run() {
        if (fd < 0) {
            fd = store->open_verified(*node);
            if (fd < 0) {
                got = fd;
                return;
            }
            opened = true;
        }
        got = store->read_at(fd, buf.get(), size, off);
    }
    void release() {
        if (fd >= 0) sys::close(fd);
        fd = -1;
    }
};

// After a call in time: the descriptor it opened becomes the open's (if
// no concurrent READ got there first), so later READs skip the open.
void keep_descriptor(OpenFile* of, RangeRead& rr) {
    if (of && rr.opened && rr.fd >= 0) {
        int expected = -1;
        if (of->fd.compare_exchange_strong(expected, rr.fd, std::memory_order_acq_rel)) {
            rr.fd = -1;
            return;
        }
    }
    rr.release();
}

} // namespace

std::shared_ptr<char[]> read_buffer(size_t size) {
    thread_local std::shared_ptr<char[]> buf;
    thread_local size_t capacity = 0;
    if (!buf || buf.use_count() > 1 || size > capacity) {
        capacity = std::max(size, capacity);
        buf = std::make_shared_for_overwrite<char[]>(capacity);
    }
    return buf;
}

void read_through(fuse_req_t req, Filesystem& fs, const index::Node& n, OpenFile* of, size_t size,
                  off_t off) {
    auto rr = std::make_shared<RangeRead>();
    rr->store = &fs.engine->backing();
    rr->node = &n;
    rr->buf = read_buffer(size);
    rr->size = size;
    rr->off = off;
    // A duplicate, so a release() racing a late call cannot close the
    // descriptor under it (or hand its number to another file).
    if (int fd = of ? of->fd.load(std::memory_order_acquire) : -1; fd >= 0) {
        rr->fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (rr->fd < 0) return reply_error(req, -errno);
    }
    if (!fs.engine->backing_calls().run({[rr] { rr->run(); }, [rr] { rr->release(); }})) {
        fs.engine->note_io_timeout(n);
        return reply_error(req, -EIO);
    }
    keep_descriptor(of, *rr);
    if (rr->got < 0) return reply_error(req, static_cast<int>(rr->got));
    auto got = static_cast<size_t>(rr->got);
    fs.counters.reads.fetch_add(1, std::memory_order_relaxed);
    fs.counters.read_bytes.fetch_add(got, std::memory_order_relaxed);
    fuse_reply_buf(req, rr->buf.get(), got);
}

} // namespace clairfs::fuse
