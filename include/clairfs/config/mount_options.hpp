// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/config/mount_choices.hpp"
#include "clairfs/index/scanner.hpp"
#include "clairfs/log.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::config {

// Every tunable of a mount. Defaults live here and only here; the registry
// in option_registry.cpp names, parses and documents each field.
// --mem auto: a quarter of the memory the daemon may use (the smaller of
// physical memory and its memory cgroup's limit), resolved at mount.
inline constexpr uint64_t auto_mem = UINT64_MAX;
// --ssd auto: room for the whole dataset, or 90% of the cache directory's
// free space if that is less, resolved at mount.
inline constexpr uint64_t auto_ssd = UINT64_MAX;

// How much of serving a file the kernel does without the daemon: who
// opens, what goes into the page cache and when it leaves, and the way
// requests come. Defaults here, parsing in option_registry.cpp.
struct FastPath {
    bool kernel_opens = false; // FUSE no_open: faster cached opens, but unseen by the daemon
    Opens opens = Opens::fuse; // how the daemon sees opens (mount_choices.hpp)
    bool push_ahead = false;   // registered: put the next files into the page cache
    bool handover = false;     // a file the page cache holds whole is not held twice
    bool open_push = true;     // at an open, put the RAM tier's copy into the page cache
    bool passthrough = true;   // the kernel reads files the tiers do not take itself
    IoUring io_uring = IoUring::auto_;      // the transport: io_uring rings or /dev/fuse
    RingSched ring_sched = RingSched::idle; // the ring threads' scheduling policy
    When one_copy = When::automatic;        // drop a RAM-tier file's pages at its last close
    When drop_behind = When::automatic;     // drop a chunked file's pages once read past
    SsdCheck ssd_check = SsdCheck::resident; // when the kernel reads SSD entries unchecked
};

// --peers and how the daemons of one launch reach each other.
struct PeerOptions {
    Peers mode = Peers::none; // mpi: form a group with the daemons of this MPI launch
    double timeout = 2;       // seconds a peer may stay silent before it counts as dead
    std::string address;      // where the others reach this daemon; empty: the host name
    unsigned port = 0;        // its listener's TCP port; 0: any free one
};

// GET /metrics over HTTP.
struct MetricsOptions {
    unsigned port = 0;                 // 0: off
    std::string address = "127.0.0.1"; // where it listens
};

// Recognising an unregistered job from its opens.
struct DetectOptions {
    bool on = true;
    std::vector<uint64_t> seeds; // searched deep besides the usual ones (torch's form)
    double cpu = 2;              // percent of one core the searches may use
};

struct MountOptions {
    std::string backing;
    std::string mountpoint;
    bool foreground = false;
    unsigned threads = 16;        // FUSE worker threads (latency-bound: more than cores)
    unsigned scan_threads = 16;   // directory readers during the mount-time scan
    uint64_t max_read = 1 << 20;  // bytes per FUSE read request
    uint64_t blksize = 0;         // st_blksize reported; 0 = the backing file's
    double cache_timeout = 86400; // kernel entry/attr cache lifetime, seconds
    double io_timeout = 60;       // longest wait for one backing or SSD read; 0 = no bound
    bool allow_other = false;
    // Who may register jobs besides root and the daemon's user: a mount
    // made as root for a job's user (a Slurm prolog). -1: nobody else.
    int64_t control_owner = -1;
    log::Level log_level = log::Level::info;
    std::string log_file; // empty: stderr in the foreground, syslog otherwise
    index::Progress progress = index::Progress::auto_;
    bool fuse_debug = false;
    uint64_t mem = auto_mem;     // RAM tier budget in bytes; auto_mem: see resolve_mem()
    unsigned fetch_threads = 16; // backing-store readers (latency-bound: more than cores)
    uint64_t chunk_size = 1 << 20; // files above the RAM tier's max_file, by chunk; 0 = read through
    std::string register_file;   // a registration (control-file JSON) applied at mount
    std::string cache_dir;       // local-SSD tier directory; empty: no SSD tier
    uint64_t ssd = auto_ssd;     // SSD tier budget in bytes; auto_ssd: see above
    bool stage = false;          // copy the whole dataset into the tiers at mount
    FastPath fast_path;
    PeerOptions peers;
    MetricsOptions metrics;
    DetectOptions detect;
};

} // namespace clairfs::config
