// SPDX-License-Identifier: MIT
// State shared by every FUSE operation of one mount. Read-mostly: the index
// and the options never change after mount; counters are relaxed atomics.
#pragma once

#include "clairfs/config/mount_options.hpp"
#include "clairfs/control/controller.hpp"
#include "clairfs/fuse/kernel_readahead.hpp"
#include "clairfs/fuse/notifier.hpp"
#include "clairfs/fuse/open_counts.hpp"
#include "clairfs/fuse/open_watch.hpp"
#include "clairfs/fuse/passthrough.hpp"
#include "clairfs/fuse/request_counts.hpp"
#include "clairfs/fuse/transport.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/engine.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <fuse_lowlevel.h>
#include <mutex>
#include <string>

namespace clairfs::fuse {

struct Counters {
    std::atomic<uint64_t> opens{0};
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> read_bytes{0};
    RequestCounts requests;
};

// With --kernel-opens, reads of .clairfs/control and status come without an
// OPEN, so no snapshot is taken at open: a read at offset 0 renders the
// document, and reads further in continue that rendering, so one pass of
// a reader never mixes two states (a status that grew between its reads
// would otherwise not parse).
struct UnopenedDocs {
    std::mutex mu; // leaf; guards the two texts
    std::string control, status;
};

struct Filesystem {
    const index::Index& index;
    int backing_fd; // O_DIRECTORY, opened before the mount hides the path
    const config::MountOptions& options;
    Counters counters;
    int ready_fd = -1; // background start-up: told once the kernel handshake reaches us
    // Forked before the mount (--peers: peer_launch.cpp), so serve() does
    // not detach again; with -f the daemon then keeps logging to stderr.
    bool predetached = false;
    prefetch::Engine* engine = nullptr;     // set before serving, lives as long as the mount
    control::Controller* control = nullptr; // likewise
    fuse_session* session = nullptr;        // while serving: for notifications to the kernel
    UnopenedDocs unopened{};                // --kernel-opens: see UnopenedDocs
    Passthrough passthrough{};              // --passthrough: files the tiers do not take
    Transport transport{};                  // --io-uring: io_uring rings or /dev/fuse
    KernelReadahead readahead{};            // the mount's readahead, raised to --max-read
    Notifier notifier{};                    // page-cache drops asked for on a ring thread
    // Over io_uring: OPENs not yet RELEASEd, by node. A push at an OPEN
    // answered on a ring thread is made only for a file with no other open
    // (fuse_init.cpp says why). Null over /dev/fuse.
    std::unique_ptr<OpenCounts> open_files{};
    // Counts an OPEN of `id` (over io_uring); undone by closed().
    void opening(index::NodeId id) {
        if (open_files) open_files->opened(id);
    }
    void closed(index::NodeId id) {
        if (open_files) open_files->closed(id);
    }
    // --opens fanotify: prepared before the mount; null otherwise.
    OpenWatch* open_watch = nullptr;
    // No OPEN of ours may come for a file: --kernel-opens, or opens
    // followed through fanotify.
    bool kernel_opens() const { return options.fast_path.kernel_opens || open_watch; }
    // Started in the serving process once the kernel handshake reaches it
    // (after any fork), beside the engine's threads.
    std::function<void()> on_start{};
    // Called when the session ends, before the engine stops.
    std::function<void()> on_stop{};
};

inline Filesystem& filesystem_of(fuse_req_t req) {
    return *static_cast<Filesystem*>(fuse_req_userdata(req));
}

inline fuse_ino_t ino_of(index::NodeId id) {
    return static_cast<fuse_ino_t>(id) + 1;
}

// The node behind a kernel inode number, or nullptr for one we never issued.
inline const index::Node* node_of(const Filesystem& fs, fuse_ino_t ino) {
    if (ino == 0 || !fs.index.contains(static_cast<index::NodeId>(ino - 1))) return nullptr;
    return &fs.index.node(static_cast<index::NodeId>(ino - 1));
}

// One place where our -errno convention meets FUSE's positive errno.
inline void reply_error(fuse_req_t req, int neg_err) {
    fuse_reply_err(req, -neg_err);
}

void fill_stat(const Filesystem& fs, const index::Node& n, struct stat& st);
void fill_entry(const Filesystem& fs, const index::Node& n, fuse_entry_param& e);

// The operation table handed to fuse_session_new().
const fuse_lowlevel_ops& operations();

} // namespace clairfs::fuse
