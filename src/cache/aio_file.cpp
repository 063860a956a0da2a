// SPDX-License-Identifier: MIT
#include "aio_file.hpp"

#include "aio_transfer.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"

#include <atomic>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <unistd.h>

namespace clairfs::cache {
namespace {

// One context per thread, as CacheLib's Device does: contexts are not
// shared, so no lock guards submission, and a thread's requests never wait
// behind another thread's completions.
struct ThreadContext {
    io_context_t ctx = nullptr;
    bool tried = false;
    ~ThreadContext() {
        if (ctx) io_destroy(ctx);
    }
};

thread_local ThreadContext t_context;
std::atomic<bool> g_setup_failure_logged{false};

// A forked child has no io contexts (they belong to the parent's address
// space), yet inherits the forking thread's pointer: it must set up anew.
void forget_context_in_child() {
    t_context.ctx = nullptr;
    t_context.tried = false;
}

io_context_t& thread_context() {
    static const int registered = ::pthread_atfork(nullptr, nullptr, forget_context_in_child);
    (void)registered;
    if (!t_context.tried) {
        t_context.tried = true;
        int rv = io_setup(static_cast<int>(AioFile::queue_depth), &t_context.ctx);
        if (rv < 0) {
            t_context.ctx = nullptr;
            // Usually fs.aio-max-nr exhausted by other processes; pread and
            // pwrite still work, only without requests in parallel.
            if (!g_setup_failure_logged.exchange(true))
                LOG_WARN("ssd tier: io_setup failed (%s); threads without an io context use "
                         "pread/pwrite",
                         sys::error_text(rv));
        }
    }
    return t_context.ctx;
}

} // namespace

AioFile::AioFile(int fd, bool direct, StallWatch stall, bool to_eof, bool keep_pages)
    : fd_(fd), direct_(direct), stall_(std::move(stall)), to_eof_(to_eof),
      keep_pages_(keep_pages) {}

AioFile::~AioFile() {
    if (fd_ >= 0) sys::close(fd_);
}

int AioFile::transfer(bool write, char* buf, size_t len, uint64_t off) {
    if (!direct_) {
        int rv = sync_transfer(fd_, write, buf, len, off, to_eof_);
        // Best effort: written pages are still dirty and stay until written
        // back; read pages go at once.
        if (!keep_pages_)
            ::posix_fadvise(fd_, static_cast<off_t>(off), static_cast<off_t>(len),
                            POSIX_FADV_DONTNEED);
        return rv;
    }
    io_context_t& ctx = thread_context();
    if (!ctx) return sync_transfer(fd_, write, buf, len, off, to_eof_);
    return aio_transfer(ctx, queue_depth, chunk, fd_, write, buf, len, off, &stall_, to_eof_);
}

int AioFile::read(char* buf, size_t len, uint64_t off) {
    return transfer(false, buf, len, off);
}

int AioFile::write(const char* buf, size_t len, uint64_t off) {
    // io_prep_pwrite takes a non-const pointer but only reads through it.
    return transfer(true, const_cast<char*>(buf), len, off);
}

int AioFile::sync() {
    return sys::neg_errno(::fdatasync(fd_));
}

} // namespace clairfs::cache
