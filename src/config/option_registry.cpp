// SPDX-License-Identifier: MIT
#include "clairfs/config/option_registry.hpp"

#include "clairfs/config/field_setters.hpp"
#include "clairfs/config/utf8_text.hpp"
#include "clairfs/config/value_parsers.hpp"

#include <bit>
#include <charconv>
#include <pwd.h>
#include <vector>

namespace clairfs::config {
namespace {

std::string bad(std::string_view name, std::string_view why) {
    return "invalid value for " + std::string(name) + ": " + std::string(why);
}

// The setter of a field in one of MountOptions' groups (FastPath,
// PeerOptions, ...): `Set` parses into the group `Group` names.
template <auto Group, auto Set> std::string in_group(MountOptions& o, std::string_view v) {
    return Set(o.*Group, v);
}

std::string set_max_read(MountOptions& o, std::string_view v) {
    uint64_t n;
    // The kernel caps one FUSE request at 256 pages.
    if (!parse_size(v, n) || n < 4096 || n > (1u << 20) || n % 4096)
        return "expected a multiple of 4K from 4K to 1M";
    o.max_read = n;
    return "";
}

std::string set_chunk_size(MountOptions& o, std::string_view v) {
    uint64_t n;
    if (!parse_size(v, n) || (n != 0 && (n < (64u << 10) || n > (64u << 20) || n % 4096)))
        return "expected 0 or a multiple of 4K from 64K to 64M";
    o.chunk_size = n;
    return "";
}

std::string set_blksize(MountOptions& o, std::string_view v) {
    uint64_t n;
    // The kernel keeps only log2(st_blksize), so anything else would be
    // silently rounded down.
    if (!parse_size(v, n) || (n != 0 && (!std::has_single_bit(n) || n < 512 || n > (64u << 20))))
        return "expected 0 or a power of two from 512 to 64M";
    o.blksize = n;
    return "";
}

std::string set_io_timeout(MountOptions& o, std::string_view v) {
    return parse_seconds(v, o.io_timeout) ? "" : "expected a non-negative number of seconds";
}

std::string set_cache_timeout(MountOptions& o, std::string_view v) {
    return parse_seconds(v, o.cache_timeout) ? "" : "expected a non-negative number of seconds";
}

// Not set_choice_field: its message says what mpi means.
std::string set_peers(MountOptions& o, std::string_view v) {
    return parse_choice(peers_words, v, o.peers.mode)
               ? ""
               : "expected mpi (the daemons of one MPI launch form the group) or none";
}

std::string set_no_one_copy(MountOptions& o, std::string_view v) {
    bool off;
    if (!parse_bool(v, off)) return "expected true or false";
    o.fast_path.one_copy = off ? When::never : When::automatic;
    return "";
}

std::string set_peer_timeout(MountOptions& o, std::string_view v) {
    double s = 0;
    // Below a tenth of a second a busy node's pings would read as a death.
    if (!parse_seconds(v, s) || s < 0.1 || s > 3600) return "expected 0.1 to 3600 seconds";
    o.peers.timeout = s;
    return "";
}

// A host name or address (--peer-address, --metrics-address).
template <auto Field> std::string set_host_field(owner_of<Field>& o, std::string_view v) {
    if (v.empty() || v.size() > 255) return "expected a host name or address";
    o.*Field = v;
    return "";
}

// A user name or a numeric uid. Resolved at mount, once: a name removed
// later must not turn the control file over to whoever gets its uid.
std::string set_control_owner(MountOptions& o, std::string_view v) {
    uint64_t uid = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), uid);
    if (!v.empty() && ec == std::errc{} && p == v.data() + v.size()) {
        if (uid >= UINT32_MAX) return "expected a user name or a uid below 4294967295";
        o.control_owner = static_cast<int64_t>(uid);
        return "";
    }
    std::string name(v);
    passwd pw{}, *found = nullptr;
    std::vector<char> buf(16384);
    if (name.empty() || getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return "no user '" + name + "': expected a user name or a uid";
    o.control_owner = pw.pw_uid;
    return "";
}

// A comma-separated list of Python int seeds.
std::string set_detect_seeds(MountOptions& o, std::string_view v) {
    std::vector<uint64_t> seeds;
    while (!v.empty()) {
        size_t comma = v.find(',');
        std::string_view one = v.substr(0, comma);
        auto seed = parse_seed(one);
        if (!seed) return "expected seeds separated by commas, each an integer in [-2^63, 2^64)";
        seeds.push_back(seed->value);
        v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
        if (comma != std::string_view::npos && v.empty()) return "a seed is missing after the last comma";
    }
    if (seeds.size() > 1000) return "at most 1000 seeds";
    o.detect.seeds = std::move(seeds);
    return "";
}

// --detect-cpu: a percentage of one core. Zero would never search again
// after the first: that is --no-detect's job, said plainly.
std::string set_detect_cpu(MountOptions& o, std::string_view v) {
    double p = 0;
    if (!parse_seconds(v, p) || p <= 0 || p > 100)
        return "expected a percentage of one core above 0, at most 100 (--no-detect turns "
               "detection off)";
    o.detect.cpu = p;
    return "";
}

// A TCP port, 0 meaning any (--peer-port) or off (--metrics-port).
template <auto Field> std::string set_port_field(owner_of<Field>& o, std::string_view v) {
    uint64_t n = 0;
    if (!parse_count(v, n) || n > 65535) return "expected a TCP port, 0 to 65535";
    o.*Field = static_cast<unsigned>(n);
    return "";
}

std::string set_log_level(MountOptions& o, std::string_view v) {
    return log::parse_level(v, o.log_level) ? "" : "expected error, warn, info or debug";
}

std::string set_log_file(MountOptions& o, std::string_view v) {
    o.log_file = v;
    return "";
}

std::string set_progress(MountOptions& o, std::string_view v) {
    if (v == "auto")
        o.progress = index::Progress::auto_;
    else if (v == "always")
        o.progress = index::Progress::always;
    else if (v == "never")
        o.progress = index::Progress::never;
    else
        return "expected auto, always or never";
    return "";
}

// "auto" (stored as the field's `automatic` sentinel, which no size may
// equal) or a size.
std::string set_size_or_auto(uint64_t& field, uint64_t automatic, std::string_view v,
                             const char* examples) {
    if (v == "auto") {
        field = automatic;
        return "";
    }
    uint64_t n;
    if (!parse_size(v, n) || n == automatic)
        return std::string("expected auto or a size such as ") + examples;
    field = n;
    return "";
}

std::string set_mem(MountOptions& o, std::string_view v) {
    return set_size_or_auto(o.mem, auto_mem, v, "0, 512M or 4G");
}

std::string set_register_file(MountOptions& o, std::string_view v) {
    o.register_file = v;
    return "";
}

std::string set_cache_dir(MountOptions& o, std::string_view v) {
    if (v.empty()) return "expected a directory";
    o.cache_dir = v;
    return "";
}

std::string set_ssd(MountOptions& o, std::string_view v) {
    return set_size_or_auto(o.ssd, auto_ssd, v, "0, 64G or 1T");
}

constexpr uint64_t max_threads = 1024;

constexpr OptionSpec specs[] = {
    {"foreground", 'f', OptionType::flag, "", "false", "stay in the foreground and log to stderr",
     set_bool_field<&MountOptions::foreground>},
    {"threads", 't', OptionType::count, "N", "16",
     "most FUSE worker threads serving requests at once",
     set_count_field<&MountOptions::threads, 1, max_threads>},
    {"scan_threads", 0, OptionType::count, "N", "16",
     "threads reading directories during the mount-time scan",
     set_count_field<&MountOptions::scan_threads, 1, max_threads>},
    {"max_read", 0, OptionType::size, "SIZE", "1M",
     "largest FUSE read request (4K..1M, multiple of 4K); also the kernel readahead", set_max_read},
    {"blksize", 0, OptionType::size, "SIZE", "0",
     "st_blksize reported for files (0 = what the backing file system reports), which sets "
     "the read() and peek() size of buffered readers such as PIL",
     set_blksize},
    {"cache_timeout", 0, OptionType::seconds, "SECONDS", "86400",
     "how long the kernel may cache names and attributes", set_cache_timeout},
    {"io_timeout", 0, OptionType::seconds, "SECONDS", "60",
     "longest a read waits for the backing store or the SSD before it fails with EIO (the "
     "read goes on in the background); 0 waits for ever",
     set_io_timeout},
    {"allow_other", 0, OptionType::flag, "", "false",
     "let other users use the mount (needs user_allow_other in /etc/fuse.conf unless root); "
     "permissions are still checked against the backing files' modes",
     set_bool_field<&MountOptions::allow_other>},
    {"control_owner", 0, OptionType::text, "USER", "",
     "a user (name or uid) who may register jobs besides root and the daemon's own user: the "
     "control file is theirs; for a mount made as root for a job's user, as a Slurm prolog "
     "does",
     set_control_owner},
    {"kernel_opens", 0, OptionType::flag, "", "false",
     "let the kernel open and close files without asking the daemon: a cached re-read costs "
     "no round trip; a file's first READ then stands for its open, and while a job is "
     "registered files are dropped from the page cache soon after they are read",
     in_group<&MountOptions::fast_path, set_bool_field<&FastPath::kernel_opens>>},
    {"opens", 0, OptionType::choice, "HOW", "fuse",
     "how the daemon follows the job's opens: fuse (each open is a round trip to the daemon), "
     "fanotify (the kernel opens files itself and fanotify tells the daemon afterwards, in "
     "batches; the files due next are pushed into the page cache ahead of their opens; needs "
     "root), or auto (fanotify where the daemon may use it, else fuse)",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::opens, opens_words>>},
    {"log_level", 0, OptionType::choice, "LEVEL", "info", "error, warn, info or debug",
     set_log_level},
    {"log_file", 0, OptionType::text, "FILE", "",
     "append the daemon's log here (default: stderr in the foreground, syslog otherwise)",
     set_log_file},
    {"progress", 0, OptionType::choice, "WHEN", "auto",
     "scan progress on stderr: auto (scans over 1 s), always or never", set_progress},
    {"mem", 0, OptionType::size, "SIZE", "auto",
     "RAM cache budget, a hard cap; 0 turns caching off; auto is a quarter of the memory the "
     "daemon may use (physical memory or its memory cgroup's limit, whichever is smaller)",
     set_mem},
    {"chunk_size", 0, OptionType::size, "SIZE", "1M",
     "files too large for the RAM tier whole (above a sixteenth of --mem) are cached and read "
     "ahead in chunks of this size (64K..64M, multiple of 4K); 0 reads them through from the "
     "backing store",
     set_chunk_size},
    {"fetch_threads", 0, OptionType::count, "N", "16",
     "threads reading whole files from the backing store (prefetches and misses)",
     set_count_field<&MountOptions::fetch_threads, 1, max_threads>},
    {"register", 0, OptionType::text, "FILE", "",
     "register a job at mount time (the JSON of .clairfs/control, see clairfs-control(5)), "
     "so prefetching starts before the job does",
     set_register_file},
    {"push_ahead", 0, OptionType::flag, "", "false",
     "while a job is registered, copy the files its loaders open next into the kernel's page "
     "cache just before they are opened, so their reads need no round trip to the daemon",
     in_group<&MountOptions::fast_path, set_bool_field<&FastPath::push_ahead>>},
    {"handover", 0, OptionType::flag, "", "false",
     "once the kernel's page cache of the mount holds a file whole, drop the RAM tier's copy "
     "(each byte in memory once); until the kernel has dropped 64 files it was handed",
     in_group<&MountOptions::fast_path, set_bool_field<&FastPath::handover>>},
    {"no_handover", 0, OptionType::flag, "", "false",
     "keep the RAM tier's copy of every file the kernel also caches (the default)",
     in_group<&MountOptions::fast_path, set_negated_field<&FastPath::handover>>},
    {"open_push", 0, OptionType::flag, "", "true",
     "at an open, copy the RAM tier's bytes of the file into the kernel's page cache unless "
     "the kernel kept them, so the job's reads make no READ round trip (the default)",
     in_group<&MountOptions::fast_path, set_bool_field<&FastPath::open_push>>},
    {"no_open_push", 0, OptionType::flag, "", "false",
     "answer every read of a file the kernel did not keep with a READ round trip",
     in_group<&MountOptions::fast_path, set_negated_field<&FastPath::open_push>>},
    {"passthrough", 0, OptionType::flag, "", "true",
     "let the kernel read files the tiers do not take straight from the backing store (FUSE "
     "passthrough: libfuse 3.17 and Linux 6.9 or later, as root), with no READ round trip (the "
     "default where available)",
     in_group<&MountOptions::fast_path, set_bool_field<&FastPath::passthrough>>},
    {"no_passthrough", 0, OptionType::flag, "", "false",
     "read files the tiers do not take through the daemon, each READ bounded by --io-timeout",
     in_group<&MountOptions::fast_path, set_negated_field<&FastPath::passthrough>>},
    {"io_uring", 0, OptionType::choice, "WHEN", "auto",
     "how the kernel's requests reach the daemon: over FUSE's io_uring rings (answered on "
     "the requester's CPU; Linux 6.14 or later with its fuse.enable_uring switch on, which "
     "clairfs never sets) or through /dev/fuse: auto (io_uring where the switch is on), on "
     "(fail the mount where it cannot), off (/dev/fuse)",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::io_uring, io_uring_words>>},
    {"ring_sched", 0, OptionType::choice, "POLICY", "idle",
     "the scheduling policy of libfuse's io_uring ring threads: idle (SCHED_IDLE: a reader "
     "woken by its CPU's ring stays on that CPU instead of moving to an idle one, which "
     "halves a cached file's open-read-close on a 2-CPU VM) or normal",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::ring_sched, ring_sched_words>>},
    {"one_copy", 0, OptionType::choice, "WHEN", "auto",
     "when the last open of a file the RAM tier holds is closed, drop its pages from the "
     "kernel's page cache, so its bytes are in memory once: always, never, or auto (while the "
     "tier's bytes would take more than half the room the page cache has)",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::one_copy, when_words>>},
    {"no_one_copy", 0, OptionType::flag, "", "false",
     "let the kernel's page cache keep files the RAM tier also holds (--one-copy never)",
     set_no_one_copy},
    {"drop_behind", 0, OptionType::choice, "WHEN", "auto",
     "drop the pages of a file held by chunk from the kernel's page cache once a sequential "
     "reader is 1 MiB past them: always, never, or auto (while the files held by chunk would "
     "take more than half the room the page cache has)",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::drop_behind, when_words>>},
    {"ssd_check", 0, OptionType::choice, "WHEN", "resident",
     "when the kernel may read a file's SSD entry itself (passthrough) without the daemon "
     "checking its bytes: resident (only while the pages the daemon's check read are still in "
     "the page cache, so no byte the disk returns later is served unchecked) or once (after "
     "one check in the mount, its write or its first read-back, while the entry's file is "
     "unchanged: the disk trusted as a local copy on it would be; faster where the memory "
     "budget cannot hold the entries' pages)",
     in_group<&MountOptions::fast_path, set_choice_field<&FastPath::ssd_check, ssd_check_words>>},
    {"cache_dir", 0, OptionType::text, "DIR", "",
     "local-disk directory for the SSD tier's cache file and journal (one pair per dataset); "
     "a later mount of the unchanged dataset with the same DIR reuses what it holds",
     set_cache_dir},
    {"ssd", 0, OptionType::size, "SIZE", "auto",
     "SSD tier budget, preallocated in --cache-dir; auto is room for the whole dataset or 90% of "
     "the directory's free space, whichever is less; 0 turns the tier off",
     set_ssd},
    {"stage", 0, OptionType::flag, "", "false",
     "copy the whole dataset into the tiers in the background from mount time (in predicted "
     "first-use order once a job is registered); see clairfs stage",
     set_bool_field<&MountOptions::stage>},
    {"peers", 0, OptionType::choice, "mpi", "none",
     "share one cache with the daemons started by the same MPI launch (mpiexec, srun): each "
     "file is read from the backing store by one daemon and fetched from it by the others",
     set_peers},
    {"peer_timeout", 0, OptionType::seconds, "SECONDS", "2",
     "a peer silent this long (it pings every quarter of it) is dead: its files come from the "
     "backing store and it is not asked again",
     set_peer_timeout},
    {"metrics_port", 0, OptionType::count, "PORT", "0",
     "serve the status in Prometheus' text format at http://ADDRESS:PORT/metrics (0: off)",
     in_group<&MountOptions::metrics, set_port_field<&MetricsOptions::port>>},
    {"metrics_address", 0, OptionType::text, "ADDRESS", "127.0.0.1",
     "where --metrics-port listens (the loopback unless told otherwise)",
     in_group<&MountOptions::metrics, set_host_field<&MetricsOptions::address>>},
    {"peer_address", 0, OptionType::text, "HOST", "",
     "the name or address the other daemons reach this one at (default: the host name)",
     in_group<&MountOptions::peers, set_host_field<&PeerOptions::address>>},
    {"peer_port", 0, OptionType::count, "PORT", "0",
     "TCP port of this daemon's peer listener (0: any free port)",
     in_group<&MountOptions::peers, set_port_field<&PeerOptions::port>>},
    {"detect", 0, OptionType::flag, "", "true",
     "while no job is registered, recognise it from its first opens (a DistributedSampler, a "
     "RandomSampler with an explicit generator, or no shuffling; seeds 0 to 100000 and the "
     "--detect-seeds) and register it as detected; see JOB DETECTION in clairfs(1)",
     in_group<&MountOptions::detect, set_bool_field<&DetectOptions::on>>},
    {"no_detect", 0, OptionType::flag, "", "false", "turn job detection off (--detect)",
     in_group<&MountOptions::detect, set_negated_field<&DetectOptions::on>>},
    {"detect_seeds", 0, OptionType::text, "LIST", "",
     "comma-separated seeds detection also tries, each as seed + epoch for the first 1000 "
     "epochs (besides 0, 1, 42, 123, 1234, 2021, 3407 and 12345)",
     set_detect_seeds},
    {"detect_cpu", 0, OptionType::seconds, "PERCENT", "2",
     "the share of one core job detection's searches may use, averaged over 100 s (a search "
     "that would exceed it waits)",
     set_detect_cpu},
    {"fuse_debug", 0, OptionType::flag, "", "false", "print every FUSE request (libfuse -d)",
     set_bool_field<&MountOptions::fuse_debug>},
};

} // namespace

std::span<const OptionSpec> mount_option_specs() {
    return specs;
}

const OptionSpec* find_option(std::string_view name) {
    std::string key = canonical_key(name);
    for (const auto& s : specs)
        if (s.name == key || (key.size() == 1 && s.short_name == key[0])) return &s;
    return nullptr;
}

std::string apply_option(MountOptions& out, std::string_view name, std::string_view value) {
    const OptionSpec* spec = find_option(name);
    if (!spec) return "unknown option '" + message_text(name) + "'";
    std::string why = spec->set(out, value);
    return why.empty() ? "" : bad(spec->name, message_text(value) + " (" + why + ")");
}

} // namespace clairfs::config
