// SPDX-License-Identifier: MIT
// How the SSD tier fails: every error is counted and the last one kept for
// status; device errors beyond a limit turn the tier off, because a disk
// that keeps failing costs each fetch a timeout for nothing.
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "ssd_core.hpp"

#include <cinttypes>
#include <cstdio>
#include <sys/file.h>

namespace clairfs::cache {
namespace {

// After a crash many entries may fail their checksum at once; the first
// ones say what happens, status counts the rest.
constexpr uint64_t logged_errors = 20;

} // namespace

std::string human_bytes(uint64_t n) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(n);
    size_t u = 0;
    while (v >= 1024 && u + 1 < std::size(units)) {
        v /= 1024;
        ++u;
    }
    char buf[48];
    if (u == 0)
        std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", n);
    else
        std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
    return buf;
}

std::string SsdTier::Core::where(uint64_t size, uint64_t off) const {
    return dir + "/" + entries_name + "/" + entry_name(off) + ", " + human_bytes(size);
}

std::string SsdTier::Core::where(const SsdEntry& e) const {
    if (e.file.empty()) return where(e.size, e.offset);
    return dir + "/" + entries_name + "/" + e.file + " at " + std::to_string(e.at) + ", " +
           human_bytes(e.size);
}

void SsdTier::Core::fail(bool io, const std::string& line) {
    uint64_t errors, io_errors;
    bool turn_off;
    {
        std::lock_guard lk(mu);
        errors = ++counters.errors;
        io_errors = io ? ++counters.io_errors : counters.io_errors;
        counters.error = line;
        turn_off = io && io_errors >= max_io_errors && enabled.load();
    }
    if (errors <= logged_errors) LOG_WARN("%s", line.c_str());
    if (errors == logged_errors)
        LOG_WARN("ssd tier: further errors are counted in status, not logged");
    if (turn_off)
        disable("ssd tier disabled after " + std::to_string(io_errors) +
                " I/O errors; last: " + line);
}

void SsdTier::Core::disable(const std::string& reason) {
    std::vector<index::NodeId> dropped;
    // Their kept files are closed after the lock, with this.
    std::unordered_map<index::NodeId, SsdEntry> gone;
    {
        std::lock_guard lk(mu);
        if (!enabled.load()) return;
        enabled.store(false);
        counters.error = reason;
        dropped.reserve(files.size());
        for (const auto& [id, e] : files) {
            set_resident(id, false);
            free_extent(e);
            dropped.push_back(id);
        }
        gone.swap(files);
        shared.clear();
        verified_entries = 0;
        kept_files = 0;
        stats.bytes = 0;
        stats.entries = 0;
        stats.capacity = 0; // planners must not count on its room
    }
    // Once only: `enabled` went from true to false under the lock above.
    LOG_ERROR("%s", reason.c_str());
    // The files stay for a later mount, which verifies them before use.
    if (on_drop)
        for (index::NodeId id : dropped) on_drop(id);
}

void SsdTier::Core::journal_failed(int rv) {
    fail(false, "ssd tier: cannot append to the journal " + dir + "/" + journal_name + ": " +
                    sys::error_text(rv) +
                    "; entries written from now on are not reused after a crash");
}

void SsdTier::Core::journal_evict(index::NodeId id, uint64_t seq) {
    if (journal.failed()) return;
    JournalRecord r;
    r.kind = JournalRecord::Kind::evict;
    r.seq = seq;
    FileIdentity f;
    if (!describe(id, f)) return;
    r.path = std::move(f.path);
    if (int rv = journal.append(r); rv < 0 && rv != -EBADF) journal_failed(rv);
}

SsdState SsdTier::state() const {
    std::lock_guard lk(core_->mu);
    SsdState s = core_->counters;
    s.enabled = core_->enabled.load();
    s.direct = core_->direct;
    s.cache_file = core_->dir + "/" + core_->cache_name;
    s.entries_dir = core_->dir + "/" + core_->entries_name;
    s.verified = core_->verified_entries;
    s.open_files = core_->kept_files;
    s.allocated = core_->extents.used_bytes();
    s.largest_free = s.enabled ? core_->extents.largest_free() : 0;
    return s;
}

void SsdTier::release_lock() {
    core_->enabled.store(false);
    if (core_->lock_fd >= 0) ::flock(core_->lock_fd, LOCK_UN);
}

TierHealth SsdTier::health() const {
    SsdState s = state();
    TierHealth h;
    h.enabled = s.enabled;
    if (!s.enabled) h.error = s.error;
    h.errors = s.errors;
    h.reused = s.reused;
    h.invalidated = s.invalidated;
    return h;
}

TierStats SsdTier::stats() const {
    std::lock_guard lk(core_->mu);
    return core_->stats;
}

} // namespace clairfs::cache
