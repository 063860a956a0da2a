// SPDX-License-Identifier: MIT
#include "cache_journal.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <xxhash.h>

namespace clairfs::cache {
namespace {

constexpr char magic[8] = {'C', 'L', 'F', 'S', 'J', 'R', 'N', '1'};
// 2: a record's offset names the entry's own file (ssd_core.hpp), where
// in 1 it was an extent of one cache file; a journal of 1 is not reused.
constexpr uint32_t version = 2;
// length, kind, padding, five u64 fields, path length.
constexpr size_t fixed_size = 4 + 1 + 3 + 5 * 8 + 2;
constexpr size_t tail_size = 8;
constexpr size_t read_chunk = size_t{1} << 20;

template <class T> void put_raw(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
}

template <class T> T get_raw(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

uint64_t hash(const char* p, size_t n) {
    return XXH3_64bits(p, n);
}

ssize_t read_some(int fd, char* p, size_t n) {
    for (;;) {
        ssize_t rv = ::read(fd, p, n);
        if (rv >= 0 || errno != EINTR) return rv < 0 ? -errno : rv;
    }
}

// The longest record decode() accepts.
constexpr size_t longest_record = fixed_size + max_journal_path + tail_size;

// A journal read in chunks: an uncompacted journal of a large dataset can
// be hundreds of megabytes, and only the folded state needs to stay. A
// small journal is read in one piece of its own size.
struct ChunkedReader {
    int fd;
    size_t chunk = read_chunk;
    std::string buf{};
    size_t pos = 0; // bytes of buf consumed
    bool eof = false;
    int rv = 0; // the first read error

    explicit ChunkedReader(int fd_in) : fd(fd_in) {
        if (struct stat st; sys::fstat(fd, &st) == 0 && st.st_size >= 0)
            chunk = static_cast<size_t>(std::min<uint64_t>(read_chunk, uint64_t(st.st_size) + 1));
    }

    std::string_view unread() const { return std::string_view(buf).substr(pos); }

    // Reads another chunk once less than one is left unread.
    void refill() {
        if (eof || buf.size() - pos >= chunk) return;
        buf.erase(0, pos);
        pos = 0;
        size_t have = buf.size();
        buf.resize(have + chunk);
        ssize_t got = read_some(fd, buf.data() + have, chunk);
        buf.resize(have + static_cast<size_t>(got > 0 ? got : 0));
        if (got < 0) rv = static_cast<int>(got);
        if (got <= 0) eof = true;
    }

    // The file's bytes not consumed, read or not yet read.
    uint64_t unconsumed() const {
        struct stat st;
        if (sys::fstat(fd, &st) != 0) return 0;
        uint64_t consumed = 0;
        // Bytes before `pos` in `buf` are consumed; the file offset tells
        // how much has been read in total.
        off_t at = ::lseek(fd, 0, SEEK_CUR);
        if (at >= 0) consumed = static_cast<uint64_t>(at) - (buf.size() - pos);
        return static_cast<uint64_t>(st.st_size) - consumed;
    }
};

} // namespace

void encode_header(uint64_t dataset_tag, std::string& out) {
    size_t start = out.size();
    out.append(magic, sizeof(magic));
    put_raw<uint32_t>(out, version);
    put_raw<uint32_t>(out, journal_header_size);
    put_raw<uint64_t>(out, dataset_tag);
    put_raw<uint64_t>(out, hash(out.data() + start, out.size() - start));
}

bool header_matches(std::string_view data, uint64_t dataset_tag) {
    std::string want;
    encode_header(dataset_tag, want);
    return data.substr(0, journal_header_size) == want;
}

void encode(const JournalRecord& r, std::string& out) {
    size_t start = out.size();
    size_t path_len = std::min(r.path.size(), max_journal_path);
    put_raw<uint32_t>(out, static_cast<uint32_t>(fixed_size + path_len + tail_size));
    put_raw<uint8_t>(out, static_cast<uint8_t>(r.kind));
    out.append(3, '\0');
    put_raw<uint64_t>(out, r.seq);
    put_raw<uint64_t>(out, r.offset);
    put_raw<uint64_t>(out, r.size);
    put_raw<int64_t>(out, r.mtime_ns);
    put_raw<uint64_t>(out, r.checksum);
    put_raw<uint16_t>(out, static_cast<uint16_t>(path_len));
    out.append(r.path.data(), path_len);
    put_raw<uint64_t>(out, hash(out.data() + start, out.size() - start));
}

size_t decode(std::string_view data, JournalRecord& out) {
    if (data.size() < fixed_size + tail_size) return 0;
    const char* p = data.data();
    auto length = get_raw<uint32_t>(p);
    auto kind = get_raw<uint8_t>(p + 4);
    auto path_len = get_raw<uint16_t>(p + fixed_size - 2);
    if (path_len > max_journal_path || length != fixed_size + path_len + tail_size ||
        length > data.size())
        return 0;
    if (kind != static_cast<uint8_t>(JournalRecord::Kind::put) &&
        kind != static_cast<uint8_t>(JournalRecord::Kind::evict))
        return 0;
    if (get_raw<uint64_t>(p + length - tail_size) != hash(p, length - tail_size)) return 0;
    out.kind = static_cast<JournalRecord::Kind>(kind);
    out.seq = get_raw<uint64_t>(p + 8);
    out.offset = get_raw<uint64_t>(p + 16);
    out.size = get_raw<uint64_t>(p + 24);
    out.mtime_ns = get_raw<int64_t>(p + 32);
    out.checksum = get_raw<uint64_t>(p + 40);
    out.path.assign(p + fixed_size, path_len);
    return length;
}

int replay_journal(int dirfd, const std::string& name, uint64_t dataset_tag,
                   const std::function<void(JournalRecord&&)>& sink, JournalReplay& out) {
    out = {};
    int fd = sys::openat(dirfd, name.c_str(), O_RDONLY);
    if (fd == -ENOENT) return 0;
    if (fd < 0) return fd;
    ChunkedReader in(fd);
    bool header_checked = false;
    JournalRecord r;
    for (;;) {
        in.refill();
        if (!header_checked) {
            if (in.buf.size() < journal_header_size && !in.eof) continue;
            if (!header_matches(in.buf, dataset_tag)) break;
            header_checked = true;
            out.found = true;
            in.pos = journal_header_size;
        }
        size_t used = decode(in.unread(), r);
        if (used == 0) {
            if (in.eof) break;
            // A record may straddle the chunk boundary: read on before
            // calling it torn, unless the buffer already holds the longest one.
            if (in.unread().size() < longest_record) continue;
            break;
        }
        in.pos += used;
        ++out.records;
        sink(std::move(r));
    }
    // Everything unread counts as ignored, read or not yet read.
    if (out.found) out.ignored_bytes = in.unconsumed();
    sys::close(fd);
    return in.rv;
}

void JournalFold::apply(JournalRecord&& r) {
    if (r.seq > max_seq_) max_seq_ = r.seq;
    auto it = latest_.find(r.path);
    if (it != latest_.end() && it->second.seq >= r.seq) return;
    std::string path = std::move(r.path);
    r.path.clear();
    if (it != latest_.end())
        it->second = std::move(r);
    else
        latest_.emplace(std::move(path), std::move(r));
}

std::unordered_map<std::string, JournalRecord> JournalFold::take_live() {
    std::erase_if(latest_,
                  [](const auto& kv) { return kv.second.kind != JournalRecord::Kind::put; });
    return std::exchange(latest_, {});
}

int write_journal(int dirfd, const std::string& name, uint64_t dataset_tag,
                  const std::vector<JournalRecord>& records) {
    std::string tmp = name + ".tmp";
    int fd = sys::neg_errno(
        ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (fd < 0) return fd;
    std::string buf;
    encode_header(dataset_tag, buf);
    int rv = 0;
    for (const auto& r : records) {
        encode(r, buf);
        if (buf.size() >= read_chunk) {
            if ((rv = sys::write_full(fd, buf.data(), buf.size())) < 0) break;
            buf.clear();
        }
    }
    if (rv == 0) rv = sys::write_full(fd, buf.data(), buf.size());
    if (rv == 0) rv = sys::neg_errno(::fchmod(fd, 0600));
    if (rv == 0) rv = sys::neg_errno(::fsync(fd));
    int crv = sys::close(fd);
    if (rv == 0) rv = crv;
    if (rv == 0) rv = sys::neg_errno(::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()));
    if (rv < 0) {
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return rv;
    }
    // The rename itself is durable only once the directory is.
    return sys::neg_errno(::fsync(dirfd));
}

JournalAppender::~JournalAppender() {
    close();
}

int JournalAppender::open(int dirfd, const std::string& name) {
    close();
    // Never created here: a journal without write_journal's header would be
    // ignored whole at the next open.
    int fd = sys::openat(dirfd, name.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) return fd;
    fd_ = fd;
    failed_.store(false);
    return 0;
}

int JournalAppender::append(const JournalRecord& r) {
    if (fd_ < 0 || failed_.load(std::memory_order_relaxed)) return -EBADF;
    thread_local std::string buf;
    buf.clear();
    encode(r, buf);
    // One write per record: O_APPEND places each whole at the end, and a
    // second write for the rest of a short one could land after another
    // thread's record, so a short write ends the journal instead.
    ssize_t rv;
    do {
        rv = ::write(fd_, buf.data(), buf.size());
    } while (rv < 0 && errno == EINTR);
    if (rv == static_cast<ssize_t>(buf.size())) return 0;
    failed_.store(true);
    return rv < 0 ? -errno : -ENOSPC;
}

bool JournalAppender::failed() const {
    return failed_.load(std::memory_order_relaxed);
}

void JournalAppender::close() {
    if (fd_ >= 0) sys::close(fd_);
    fd_ = -1;
}

} // namespace clairfs::cache
