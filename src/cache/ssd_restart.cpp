// SPDX-License-Identifier: MIT
// Restart-warm: the journal of the previous mount, folded to the latest
// state of each path, is matched against the files of this mount; entries
// whose file kept its size and mtime are taken back, every other one is
// dropped. The journal is then rewritten with only what was kept, and once
// more at a clean close.
//
// Durability rule: data is not fdatasync'ed before its journal record is
// appended, so after a crash a record may describe bytes that never reached
// the disk, or that a later put overwrote. Such an entry is taken back, and
// its checksum fails at its first read: it is dropped then, never served.
// A clean close syncs the data before it writes the journal, so after one
// every entry reads back intact. Either way each entry is read back and
// checked once in a mount before the kernel is let read it itself
// (SsdEntry::verified).
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "journal_placement.hpp"
#include "ssd_core.hpp"

#include <algorithm>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_set>
#include <utility>
#include <vector>

namespace clairfs::cache {
namespace {

using Kept = JournalEntries;

// The live records of the previous mount whose file is unchanged in this
// one; counts the others as invalidated.
Kept match_files(std::unordered_map<std::string, JournalRecord> live, const DescribeFile& describe,
                 size_t nodes, uint64_t& invalidated) {
    Kept keep;
    FileIdentity f;
    for (size_t i = 0; i < nodes && !live.empty(); ++i) {
        auto id = static_cast<index::NodeId>(i);
        if (!describe(id, f)) continue;
        auto it = live.find(f.path);
        if (it == live.end()) continue;
        if (it->second.size == f.size && it->second.mtime_ns == f.mtime_ns) {
            it->second.path = std::move(f.path);
            keep.emplace_back(id, std::move(it->second));
        } else {
            ++invalidated;
        }
        live.erase(it);
    }
    invalidated += live.size(); // files no longer in the dataset
    return keep;
}

} // namespace

void SsdTier::Core::restart_warm(bool existed) {
    JournalFold fold;
    // Whether the reserve was there says nothing of the entries: each
    // one's own file does (check_entry_files).
    (void)existed;
    read_journal(fold);
    Kept keep = match_files(fold.take_live(), describe, nodes, counters.invalidated);
    counters.discarded += place_entries(keep, extents);
    counters.discarded += check_entry_files(keep);
    next_seq = keep.size() + 1;
    rewrite_journal(adopt(keep));
    LOG_INFO("ssd tier: %s in %s/%s (%s); reused %llu files (%s), invalidated %llu, "
             "discarded %llu",
             human_bytes(stats.capacity).c_str(), dir.c_str(), entries_name.c_str(),
             direct ? "O_DIRECT" : "buffered", static_cast<unsigned long long>(counters.reused),
             human_bytes(stats.bytes).c_str(),
             static_cast<unsigned long long>(counters.invalidated),
             static_cast<unsigned long long>(counters.discarded));
}

void SsdTier::Core::read_journal(JournalFold& fold) {
    JournalReplay replay;
    int rv = replay_journal(
        dir_fd, journal_name, dataset_tag, [&](JournalRecord&& r) { fold.apply(std::move(r)); },
        replay);
    if (rv < 0)
        LOG_WARN("ssd tier: cannot read the journal %s/%s: %s; reusing what was read before "
                 "the error",
                 dir.c_str(), journal_name.c_str(), sys::error_text(rv));
    if (replay.ignored_bytes > 0)
        LOG_INFO("ssd tier: ignored the last %s of the journal (torn by a crash or corrupt)",
                 human_bytes(replay.ignored_bytes).c_str());
}

uint64_t SsdTier::Core::check_entry_files(JournalEntries& keep) {
    const size_t before = keep.size();
    std::unordered_set<std::string> named;
    std::erase_if(keep, [&](const auto& k) {
        const JournalRecord& r = k.second;
        if (r.size == 0) return false;
        // An entry sharing a file (a record file's chunk) needs that file
        // at the record file's size; whether its range holds its bytes is
        // the checksum's to say at its first read.
        SsdEntry placed;
        placed.size = r.size;
        const bool in_shared = place_of(k.first, placed);
        std::string name = in_shared ? placed.file : entry_name(r.offset);
        struct stat st;
        bool ok = sys::fstatat(entries_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISREG(st.st_mode) &&
                  static_cast<uint64_t>(st.st_size) == (in_shared ? placed.file_size : r.size);
        if (ok) {
            named.insert(std::move(name));
        } else {
            extents.release(r.offset, r.size);
        }
        return !ok;
    });
    // Everything else goes: files of entries evicted or never journalled
    // (a crash between a write and its record), or put there by hand.
    int fd = ::dup(entries_fd);
    DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
    if (!d && fd >= 0) sys::close(fd);
    uint64_t swept = 0;
    while (d) {
        dirent* de = ::readdir(d);
        if (!de) break;
        std::string n = de->d_name;
        if (n == "." || n == ".." || named.contains(n)) continue;
        if (::unlinkat(entries_fd, n.c_str(), 0) != 0)
            ::unlinkat(entries_fd, n.c_str(), AT_REMOVEDIR);
        ++swept;
    }
    if (d) ::closedir(d);
    if (swept) LOG_INFO("ssd tier: removed %llu files no journal record vouches for from %s/%s",
                        static_cast<unsigned long long>(swept), dir.c_str(), entries_name.c_str());
    // Renumbered as place_entries left them, oldest first.
    for (size_t i = 0; i < keep.size(); ++i) keep[i].second.seq = i + 1;
    return before - keep.size();
}

std::vector<JournalRecord> SsdTier::Core::adopt(JournalEntries& keep) {
    std::vector<JournalRecord> records;
    for (auto& [id, r] : keep) {
        SsdEntry e{r.offset, r.size, r.checksum, r.seq, false, {}, {}, 0, 0, {}};
        if (place_of(id, e)) {
            SharedFile& sf = shared[e.file];
            struct stat st;
            if (sf.entries++ == 0 &&
                sys::fstatat(entries_fd, e.file.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
                sf.stamp = stamp_of(st);
        }
        files.emplace(id, std::move(e));
        set_resident(id, true);
        stats.bytes += r.size;
        records.push_back(std::move(r));
    }
    stats.entries = files.size();
    counters.reused = files.size();
    return records;
}

void SsdTier::Core::rewrite_journal(const std::vector<JournalRecord>& records) {
    int rv = write_journal(dir_fd, journal_name, dataset_tag, records);
    if (rv == 0) rv = journal.open(dir_fd, journal_name);
    if (rv >= 0) return;
    ::unlinkat(dir_fd, journal_name.c_str(), 0);
    fail(false, "ssd tier: cannot write the journal " + dir + "/" + journal_name + ": " +
                    sys::error_text(rv) + "; the next mount will start cold");
}

void SsdTier::Core::close() {
    if (!enabled.load() || entries_fd < 0) return;
    int rv = sys::neg_errno(::syncfs(entries_fd));
    size_t saved = 0;
    if (rv == 0) {
        std::vector<std::pair<index::NodeId, SsdEntry>> held;
        {
            std::lock_guard lk(mu);
            held.assign(files.begin(), files.end());
        }
        std::sort(held.begin(), held.end(),
                  [](const auto& a, const auto& b) { return a.second.seq < b.second.seq; });
        std::vector<JournalRecord> records;
        records.reserve(held.size());
        FileIdentity f;
        for (const auto& [id, e] : held) {
            if (!describe(id, f)) continue;
            records.push_back(put_record(e, std::move(f)));
        }
        journal.close();
        saved = records.size();
        rv = write_journal(dir_fd, journal_name, dataset_tag, records);
    }
    if (rv < 0) {
        journal.close();
        ::unlinkat(dir_fd, journal_name.c_str(), 0);
        LOG_WARN("ssd tier: cannot save the journal %s/%s: %s; the next mount starts cold",
                 dir.c_str(), journal_name.c_str(), sys::error_text(rv));
        return;
    }
    LOG_INFO("ssd tier: saved %zu files for the next mount", saved);
}

} // namespace clairfs::cache
