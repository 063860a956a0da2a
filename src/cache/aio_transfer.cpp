// SPDX-License-Identifier: MIT
#include "aio_transfer.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

namespace clairfs::cache {
namespace {

constexpr unsigned max_depth = 64;
// io_submit says EAGAIN when the kernel is short of resources for a moment;
// with nothing of ours in flight to wait for, it is retried after a pause.
constexpr int eagain_retries = 1000;

struct Piece {
    char* buf = nullptr;
    size_t len = 0;
    uint64_t off = 0;
};

// The requests of one transfer: a cursor over the bytes not yet asked for,
// the remainders of short completions, and the slots in flight.
class Transfer {
public:
    Transfer(io_context_t& ctx, unsigned depth, size_t chunk, int fd, bool write, char* buf,
             size_t len, uint64_t off, const StallWatch* stall, bool to_eof)
        : to_eof_(to_eof && !write), ctx_(ctx), depth_(std::min(depth, max_depth)), chunk_(chunk), fd_(fd), write_(write),
          buf_(buf), len_(len), off_(off),
          stall_(stall && stall->after.count() > 0 ? stall : nullptr) {}

    int run() {
        while (err_ == 0 && (has_next() || inflight_ > 0)) {
            if (int rv = submit_more(); rv < 0) fail(rv);
            if (inflight_ > 0) {
                if (int rv = reap(); rv < 0) return broken(rv);
            }
        }
        while (inflight_ > 0) {
            if (int rv = reap(); rv < 0) return broken(rv);
        }
        return err_;
    }

private:
    bool has_next() const { return !retry_.empty() || cursor_ < len_; }

    Piece next() {
        if (!retry_.empty()) {
            Piece p = retry_.back();
            retry_.pop_back();
            return p;
        }
        size_t n = std::min(chunk_, len_ - cursor_);
        Piece p{buf_ + cursor_, n, off_ + cursor_};
        cursor_ += n;
        return p;
    }

    void fail(int rv) {
        if (err_ == 0) err_ = rv;
    }

    // Fills the free slots and submits them; 0 or the io_submit error.
    int submit_more() {
        std::array<iocb*, max_depth> batch;
        unsigned n = 0;
        for (unsigned i = 0; i < depth_ && has_next(); ++i) {
            if (busy_[i]) continue;
            Piece p = next();
            pieces_[i] = p;
            if (write_)
                io_prep_pwrite(&cbs_[i], fd_, p.buf, p.len, static_cast<long long>(p.off));
            else
                io_prep_pread(&cbs_[i], fd_, p.buf, p.len, static_cast<long long>(p.off));
            cbs_[i].data = &pieces_[i];
            busy_[i] = true;
            batch[n++] = &cbs_[i];
        }
        unsigned done = 0;
        int again = 0;
        while (done < n) {
            int rv = io_submit(ctx_, n - done, batch.data() + done);
            if (rv > 0) {
                done += static_cast<unsigned>(rv);
                inflight_ += static_cast<unsigned>(rv);
                continue;
            }
            if (rv == -EINTR) continue;
            if (rv == -EAGAIN && inflight_ > 0) break; // a completion frees what it lacks
            if (rv == -EAGAIN && ++again < eagain_retries) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                continue;
            }
            unsubmit(batch.data() + done, n - done);
            return rv == 0 ? -EIO : rv;
        }
        unsubmit(batch.data() + done, n - done);
        return 0;
    }

    // Puts requests io_submit did not take back in the queue.
    void unsubmit(iocb** cbs, unsigned n) {
        for (unsigned k = 0; k < n; ++k) {
            auto* p = static_cast<Piece*>(cbs[k]->data);
            retry_.push_back(*p);
            busy_[static_cast<size_t>(p - pieces_.data())] = false;
        }
    }

    int reap() {
        std::array<io_event, max_depth> events;
        int got;
        do {
            timespec bound{};
            if (stall_) {
                auto ms = stall_->after.count();
                bound = {static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000};
            }
            got = io_getevents(ctx_, 1, static_cast<long>(inflight_), events.data(),
                               stall_ ? &bound : nullptr);
            if (got == 0 && stall_) {
                stall_->stalled();
                stall_ = nullptr; // told once; now wait for as long as the device takes
                got = -EINTR;
            }
        } while (got == -EINTR);
        if (got < 0) return got;
        for (int k = 0; k < got; ++k) complete(events[static_cast<size_t>(k)]);
        return 0;
    }

    void complete(const io_event& ev) {
        auto* p = static_cast<Piece*>(ev.data);
        busy_[static_cast<size_t>(p - pieces_.data())] = false;
        --inflight_;
        long res = static_cast<long>(ev.res);
        if (res < 0) return fail(static_cast<int>(res));
        // Zero bytes means the file ends before the request: an end the
        // caller expects (to_eof), or the file was truncated under us.
        if (res == 0) {
            if (!to_eof_) fail(-EIO);
            return;
        }
        auto moved = static_cast<size_t>(res);
        // Short: the end of the file where the caller expects one (with
        // O_DIRECT the rest could not even be asked for, unaligned).
        if (moved < p->len && !to_eof_)
            retry_.push_back({p->buf + moved, p->len - moved, p->off + moved});
    }

    // io_getevents itself failed: only io_destroy, which waits for every
    // request of the context, makes it safe to return and free the buffer.
    int broken(int rv) {
        io_destroy(ctx_);
        ctx_ = nullptr;
        inflight_ = 0;
        return rv;
    }

    bool to_eof_;
    io_context_t& ctx_;
    unsigned depth_;
    size_t chunk_;
    int fd_;
    bool write_;
    char* buf_;
    size_t len_;
    uint64_t off_;
    size_t cursor_ = 0;
    std::vector<Piece> retry_;
    std::array<iocb, max_depth> cbs_{};
    std::array<Piece, max_depth> pieces_{};
    std::array<bool, max_depth> busy_{};
    unsigned inflight_ = 0;
    int err_ = 0;
    const StallWatch* stall_;
};

} // namespace

int aio_transfer(io_context_t& ctx, unsigned depth, size_t chunk, int fd, bool write, char* buf,
                 size_t len, uint64_t off, const StallWatch* stall, bool to_eof) {
    if (len == 0) return 0;
    return Transfer(ctx, depth == 0 ? 1 : depth, chunk, fd, write, buf, len, off, stall, to_eof)
        .run();
}

int sync_transfer(int fd, bool write, char* buf, size_t len, uint64_t off, bool to_eof) {
    size_t done = 0;
    while (done < len) {
        auto at = static_cast<off_t>(off + done);
        ssize_t rv = write ? ::pwrite(fd, buf + done, len - done, at)
                           : ::pread(fd, buf + done, len - done, at);
        if (rv < 0 && errno == EINTR) continue;
        if (rv < 0) return -errno;
        if (rv == 0) return to_eof && !write ? 0 : -EIO; // the file ends early
        done += static_cast<size_t>(rv);
    }
    return 0;
}

} // namespace clairfs::cache
