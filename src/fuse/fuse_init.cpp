// SPDX-License-Identifier: MIT
#include "clairfs/fuse/daemon.hpp"
#include "clairfs/log.hpp"
#include "fuse_ops.hpp"

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace clairfs::fuse {
namespace {

// Asks for FUSE passthrough where every part has it; "" if asked, else why not.
std::string passthrough_refusal(Filesystem& fs, fuse_conn_info* conn) {
    if (!fs.options.fast_path.passthrough) return "off (--no-passthrough)";
    if (fs.kernel_opens()) return "off while the kernel opens files itself (no OPEN to hand the file over at)";
#if CLAIRFS_HAVE_PASSTHROUGH
    if (!(conn->capable & FUSE_CAP_PASSTHROUGH))
        return "the kernel lacks it (Linux 6.9 or later with CONFIG_FUSE_PASSTHROUGH has it)";
    // The kernel hands a backing file only to a process with CAP_SYS_ADMIN.
    if (::geteuid() != 0) return "it needs root (CAP_SYS_ADMIN)";
    conn->want |= FUSE_CAP_PASSTHROUGH;
    // Backing files on a file system that stacks on another (overlayfs,
    // another passthrough mount) are refused, and clairfs stays stackable
    // under one more layer.
    conn->max_backing_stack_depth = 1;
    return "";
#else
    (void)conn;
    return "this build's libfuse (" + std::to_string(FUSE_MAJOR_VERSION) + "." +
           std::to_string(FUSE_MINOR_VERSION) + ") lacks it (3.17 or later has it)";
#endif
}

// What this mount asks of the kernel: request sizes and capabilities.
void negotiate(Filesystem& fs, fuse_conn_info* conn) {
    auto max = static_cast<unsigned>(fs.options.max_read);
    // Readahead requests carry most of a sample in one round trip; the
    // kernel sizes max_pages from max_write, so raise it too even though
    // nothing is ever written.
    conn->max_read = max; // must repeat the max_read mount option
    conn->max_readahead = max;
    conn->max_write = max;
    // Background (readahead) requests in flight; the default of 12 starves
    // many concurrent readers of a latency-bound backing store.
    conn->max_background = 64;
    conn->congestion_threshold = 48;

    auto want = [conn](unsigned cap) {
        if (conn->capable & cap) conn->want |= cap;
    };
    want(FUSE_CAP_ASYNC_READ);
    want(FUSE_CAP_PARALLEL_DIROPS);
    want(FUSE_CAP_CACHE_SYMLINKS);
    // O_TRUNC arrives with OPEN instead of as a SETATTR first, so `>
    // .clairfs/control` is one request and a dataset file's O_TRUNC open
    // is refused by open itself.
    // Not when the kernel opens files itself: with no OPEN to truncate at,
    // it would take an O_TRUNC open's truncation as done and cache a size
    // of 0 for a dataset file. Without the flag the truncation is a
    // SETATTR, which is refused (EROFS) for the dataset and taken for the
    // control file.
    // (libfuse asks for it by default.)
    if (fs.kernel_opens()) {
        conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
        want(FUSE_CAP_NO_OPEN_SUPPORT);
    } else {
        want(FUSE_CAP_ATOMIC_O_TRUNC);
    }
    // readdirplus on every listing: dataset loaders list a directory and then
    // open every file in it, so priming the dentries saves one lookup each.
    want(FUSE_CAP_READDIRPLUS);
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
    // Nothing changes under the mount, so mtime checks would only cost.
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
    conn->time_gran = 1;
}

// How the engine puts bytes into the kernel's page cache.
void set_pushers(Filesystem& fs) {
    fuse_session* se = fs.session;
    // Bytes of a file into the kernel's page cache at an offset.
    auto store = [se](index::NodeId id, uint64_t off, const char* bytes, size_t size) {
        fuse_bufvec bv{};
        bv.count = 1;
        bv.buf[0].size = size;
        bv.buf[0].mem = const_cast<char*>(bytes); // notify_store only reads it
        bv.buf[0].fd = -1;
        return fuse_lowlevel_notify_store(se, ino_of(id), static_cast<off_t>(off), &bv,
                                          FUSE_BUF_NO_SPLICE);
    };
    // A push waits for any page of the file that a READ in flight has
    // locked, and that READ for a thread to answer it. Over /dev/fuse
    // another reader thread does (the engine keeps pushes to half of
    // them); over io_uring the READ may be queued behind the push on its
    // own CPU's ring, whose one thread is the one pushing. So on a ring
    // thread a file is pushed only while no other open of it exists (a
    // READ of it holds a reference to an open, which the kernel releases
    // after the READ's answer), and a range never (its own READ is in
    // flight, readahead beside it). -EAGAIN: the engine counts it busy,
    // and the reads come as READs.
    if (fs.transport.on()) fs.open_files = std::make_unique<OpenCounts>();
    const OpenCounts* open_files = fs.open_files.get();
    auto push_file = [store, open_files](index::NodeId id, const cache::Blob& b) {
        if (Transport::on_ring_thread() && (!open_files || open_files->of(id) > 1))
            return -EAGAIN;
        return store(id, 0, b.bytes.get(), b.size);
    };
    if (fs.options.fast_path.push_ahead || fs.options.fast_path.open_push || fs.open_watch)
        fs.engine->set_pusher(push_file);
    // A ranges job's samples due next (RangeJobs::push).
    fs.engine->set_range_pusher(
        [store](index::NodeId id, uint64_t off, const char* bytes, size_t size) {
            return Transport::on_ring_thread() ? -EAGAIN : store(id, off, bytes, size);
        });
}

// How the engine drops pages from the kernel's page cache; on a ring
// thread, the same way as pushes, from the notifier's thread
// (notifier.hpp).
void set_droppers(Filesystem& fs) {
    fuse_session* se = fs.session;
    Notifier& notifier = fs.notifier;
    auto drop_range = [se, &notifier](index::NodeId id, uint64_t off, uint64_t size) {
        auto drop = [se, id, off, size] {
            return fuse_lowlevel_notify_inval_inode(se, ino_of(id), static_cast<off_t>(off),
                                                    static_cast<off_t>(size));
        };
        if (!Transport::on_ring_thread()) return drop();
        notifier.post([drop] { drop(); });
        return 0;
    };
    fs.engine->set_range_dropper(drop_range);
    // One notification drops a file's pages: to evict a file handed over
    // to the kernel, and (--kernel-opens) every file soon after it is read.
    auto drop_pages = [drop_range](index::NodeId id) { return drop_range(id, 0, 0); };
    fs.engine->set_invalidator(drop_pages);
    if (fs.options.fast_path.kernel_opens) fs.engine->set_dropper(drop_pages);
}

// From here on the daemon has no terminal: later lines go to syslog or
// --log-file. A daemon forked for --peers with -f keeps it: its
// launcher's process waits in the foreground for it.
void report_ready(Filesystem& fs) {
    if (fs.ready_fd < 0) return;
    bool keep = fs.predetached && fs.options.foreground;
    if (!keep && log::redirect(fs.options.log_file) < 0) log::redirect("");
    notify_ready(fs.ready_fd, keep);
}

void init_core(Filesystem& fs, fuse_conn_info* conn) {
    negotiate(fs, conn);
    // Before the threads start: --io-uring on without the kernel's offer
    // ends the mount here, before it is reported ready.
    if (auto why = fs.transport.init(conn); !why.empty()) throw std::runtime_error(why);
    fs.passthrough.start(passthrough_refusal(fs, conn));
    // Files the SSD tier holds are passed through from their entries.
    fs.engine->serve_ssd_by_kernel(fs.passthrough.on(),
                                   [&fs](index::NodeId id) { fs.passthrough.dropped(id); });
    set_pushers(fs);
    set_droppers(fs);
    // Here, in the process that serves, after any fork: threads start now.
    fs.engine->start();
    // Its thread marks the mount once the kernel has this INIT's reply.
    if (fs.open_watch) fs.open_watch->start(fs);
    if (fs.control) fs.control->start_detection();
    if (fs.on_start) fs.on_start();
    report_ready(fs);
}

} // namespace

// A mount that cannot start its threads serves nothing well: it ends the
// session instead of limping on, and `clairfs mount` reports that the
// daemon exited during start-up.
void fuse_init(void* userdata, fuse_conn_info* conn) {
    auto& fs = *static_cast<Filesystem*>(userdata);
    try {
        init_core(fs, conn);
    } catch (const std::exception& e) {
        LOG_ERROR("cannot start serving: %s", e.what());
        fuse_session_exit(fs.session);
    } catch (...) {
        LOG_ERROR("cannot start serving: an unknown exception");
        fuse_session_exit(fs.session);
    }
}

} // namespace clairfs::fuse
