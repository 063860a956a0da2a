// SPDX-License-Identifier: MIT
// What the SSD cache file holds, on disk next to it, so that a remount over
// an unchanged dataset starts warm. Records name files by relative path
// (NodeIds change between mounts) and carry their own checksum, so a torn
// tail after a crash is recognised and ignored. Each change has a sequence
// number given under the tier's lock; replay trusts those numbers, not the
// order of the records in the file, because appends are made without the
// lock and may land out of order.
//
// Layout (host byte order; little-endian hosts only):
//   header  "CLFSJRN1" u32 version u32 header_size u64 dataset_tag
//           u64 XXH3 of the 24 bytes before
//   record  u32 length u8 kind u8[3] zero u64 seq u64 offset u64 size
//           u64 mtime_ns u64 checksum u16 path_len path[path_len]
//           u64 XXH3 of the record's bytes before it
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace clairfs::cache {

static_assert(std::endian::native == std::endian::little, "the journal is little-endian");

struct JournalRecord {
    enum class Kind : uint8_t { put = 1, evict = 2 };
    Kind kind = Kind::put;
    uint64_t seq = 0;
    std::string path;      // relative to the backing root
    uint64_t offset = 0;   // put: the entry's extent of the reserve, which names its file
    uint64_t size = 0;     // put: the file's size, as stored
    int64_t mtime_ns = 0;  // put: the file's mtime when it was stored
    uint64_t checksum = 0; // put: XXH3-64 of the file's bytes

    bool operator==(const JournalRecord&) const = default;
};

inline constexpr size_t journal_header_size = 32;
inline constexpr size_t max_journal_path = 4096;

void encode_header(uint64_t dataset_tag, std::string& out);
// Whether `data` starts with a valid header for `dataset_tag`.
bool header_matches(std::string_view data, uint64_t dataset_tag);

// Appends the record's bytes to `out`.
void encode(const JournalRecord& r, std::string& out);
// Decodes the record at the start of `data`. Returns the bytes it took, or
// 0 when `data` does not start with a whole, intact record.
size_t decode(std::string_view data, JournalRecord& out);

struct JournalReplay {
    bool found = false;         // the file exists, with this dataset's header
    uint64_t records = 0;       // intact records passed to the sink
    uint64_t ignored_bytes = 0; // from the first torn or corrupt record on
};

// Streams the intact records of the journal `name` in `dirfd` to `sink` in
// file order, stopping at the first record that is torn or corrupt. A
// missing file, or one written for another dataset, gives no records.
// 0, or -errno of a failed open or read (records already passed stand).
int replay_journal(int dirfd, const std::string& name, uint64_t dataset_tag,
                   const std::function<void(JournalRecord&&)>& sink, JournalReplay& out);

// Folds records into the latest state of each path: the change with the
// highest sequence number wins, whatever the order records come in.
class JournalFold {
public:
    void apply(JournalRecord&& r);
    // The paths whose latest change is a put, keyed by path (the records'
    // own path fields are left empty); the fold is empty afterwards.
    std::unordered_map<std::string, JournalRecord> take_live();
    uint64_t max_seq() const { return max_seq_; }

private:
    std::unordered_map<std::string, JournalRecord> latest_;
    uint64_t max_seq_ = 0;
};

// Replaces the journal `name` with a header and `records`: written to a
// temporary file, fsynced and renamed over it, so a crash leaves either
// the old or the new journal whole. 0 or -errno (old journal untouched).
int write_journal(int dirfd, const std::string& name, uint64_t dataset_tag,
                  const std::vector<JournalRecord>& records);

// Appends records while mounted, one write(2) each on an O_APPEND
// descriptor, so concurrent appenders need no lock. After one failed
// append (a torn record may be on disk; replay stops there) it appends
// nothing more.
class JournalAppender {
public:
    JournalAppender() = default;
    ~JournalAppender();
    JournalAppender(const JournalAppender&) = delete;
    JournalAppender& operator=(const JournalAppender&) = delete;

    // Opens a journal write_journal made; 0 or -errno.
    int open(int dirfd, const std::string& name);
    // 0, or -errno of this append; -EBADF once closed or failed.
    int append(const JournalRecord& r);
    bool failed() const;
    void close();

private:
    int fd_ = -1;
    std::atomic<bool> failed_{false};
};

} // namespace clairfs::cache
