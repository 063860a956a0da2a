// SPDX-License-Identifier: MIT
// SSD journal replay. The first byte picks the form: odd, the rest is raw
// bytes after a valid header (decode sees garbage); even, the rest
// describes records that are encoded with valid checksums, then perhaps
// one byte flipped or the tail cut, as a crash or a bad disk leaves them.
// Whatever replay passes on, the entries the tier takes back must lie
// inside the cache file and must not overlap.
#include "cache/cache_journal.hpp"
#include "cache/journal_placement.hpp"
#include "fuzz_check.hpp"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <unistd.h>

using namespace clairfs;
using fuzz::Cursor;
using cache::JournalRecord;

namespace {

constexpr uint64_t tag = 0x5eed;
constexpr uint64_t capacity = 64 * cache::ExtentAllocator::alignment + 100;

char shm_dir[] = "/dev/shm/clairfs-fuzz-XXXXXX";
char tmp_dir[] = "/tmp/clairfs-fuzz-XXXXXX";
const char* made_dir = nullptr;

void remove_dir() {
    std::string journal = std::string(made_dir) + "/journal";
    ::unlink(journal.c_str());
    ::rmdir(made_dir);
}

// In memory where there is a tmpfs: one journal file is written per input.
int journal_dir() {
    static int fd = [] {
        made_dir = mkdtemp(shm_dir);
        if (!made_dir) made_dir = mkdtemp(tmp_dir);
        fuzz::require(made_dir != nullptr, "cannot make a temporary directory");
        atexit(remove_dir);
        return ::open(made_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }();
    return fd;
}

JournalRecord record_from(Cursor& c, uint64_t seq) {
    JournalRecord r;
    uint8_t kind = c.take<uint8_t>();
    r.kind = kind & 1 ? JournalRecord::Kind::evict : JournalRecord::Kind::put;
    r.seq = kind & 2 ? seq : c.take<uint8_t>(); // in order, or repeated and shuffled
    r.path = "f" + std::to_string(c.take<uint8_t>() % 8);
    uint16_t page = c.take<uint16_t>();
    r.offset = page * cache::ExtentAllocator::alignment + (kind & 4 ? c.take<uint8_t>() : 0);
    r.size = kind & 8 ? c.take<uint64_t>() : c.take<uint16_t>() * 37;
    r.checksum = seq;
    return r;
}

// The journal's bytes; `intact` is how many records a replay must return.
std::string journal_from(std::string_view in, size_t& intact) {
    std::string out;
    cache::encode_header(tag, out);
    intact = 0;
    if (!in.empty() && (in[0] & 1)) {
        out.append(in.substr(1));
        return out;
    }
    Cursor c{in.substr(in.empty() ? 0 : 1)};
    auto damage = c.take<uint16_t>();
    for (uint64_t seq = 1; !c.in.empty() && seq < 200; ++seq, ++intact)
        cache::encode(record_from(c, seq), out);
    if (damage & 1 && out.size() > cache::journal_header_size) {
        size_t at = cache::journal_header_size + (damage >> 1) % (out.size() - cache::journal_header_size);
        out[at] = static_cast<char>(out[at] ^ 0x5a);
        intact = SIZE_MAX; // some prefix survives; which, the checksum decides
    }
    return out;
}

void check_placement(cache::JournalEntries& entries) {
    cache::ExtentAllocator extents(capacity);
    cache::place_entries(entries, extents);
    std::map<uint64_t, uint64_t> taken; // offset -> end
    uint64_t used = 0, seq = 0;
    for (const auto& [id, r] : entries) {
        fuzz::require(r.seq == ++seq, "kept entries are not renumbered in order");
        if (r.size == 0) {
            fuzz::require(r.offset == 0, "an empty entry keeps a wild offset");
            continue;
        }
        uint64_t len = cache::ExtentAllocator::aligned(r.size);
        fuzz::require(len >= r.size, "an extent length wrapped");
        fuzz::require(r.offset % cache::ExtentAllocator::alignment == 0, "a misaligned extent");
        fuzz::require(r.offset <= capacity && len <= capacity - r.offset,
                      "an extent past the end of the cache file");
        auto next = taken.lower_bound(r.offset);
        fuzz::require(next == taken.end() || next->first >= r.offset + len, "extents overlap");
        fuzz::require(next == taken.begin() || std::prev(next)->second <= r.offset,
                      "extents overlap");
        taken.emplace(r.offset, r.offset + len);
        used += len;
    }
    fuzz::require(used == extents.used_bytes(), "the allocator's count differs from the entries");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view in = fuzz::as_text(data, size);
    JournalRecord scratch;
    fuzz::require(cache::decode(in, scratch) <= in.size(), "decode took more than it was given");

    size_t intact = 0;
    std::string bytes = journal_from(in, intact);
    int dir = journal_dir();
    int fd = ::openat(dir, "journal", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    fuzz::require(fd >= 0 && ::write(fd, bytes.data(), bytes.size()) ==
                                 static_cast<ssize_t>(bytes.size()),
                  "cannot write the journal");
    ::close(fd);

    cache::JournalFold fold;
    cache::JournalReplay replay;
    int rv = cache::replay_journal(
        dir, "journal", tag, [&](JournalRecord&& r) { fold.apply(std::move(r)); }, replay);
    fuzz::require(rv == 0 && replay.found, "a journal with a valid header is not found");
    if (intact != SIZE_MAX && (in.empty() || !(in[0] & 1)))
        fuzz::require(replay.records == intact && replay.ignored_bytes == 0,
                      "replay lost intact records");
    fuzz::require(replay.ignored_bytes <= bytes.size(), "more ignored than the journal holds");

    cache::JournalEntries entries;
    index::NodeId id = 0;
    for (auto& [path, r] : fold.take_live()) {
        fuzz::require(r.kind == JournalRecord::Kind::put, "a live entry that is not a put");
        entries.emplace_back(id++, std::move(r));
    }
    check_placement(entries);
    return 0;
}
