// SPDX-License-Identifier: MIT
// The SSD tier's journal: records survive a round trip, a torn or corrupt
// tail is ignored while everything before it stands, another dataset's
// journal is never read, and the latest change of a path wins by sequence
// number whatever order the records arrive in.
#include "cache/cache_journal.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace clairfs;
using cache::JournalRecord;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t tag = 0x1234abcd5678ef00ull;

struct JournalDir {
    fs::path path;
    int fd = -1;
    JournalDir() {
        char t[] = "/var/tmp/clairfs-journal-XXXXXX";
        REQUIRE(mkdtemp(t));
        path = t;
        fd = ::open(t, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        REQUIRE(fd >= 0);
    }
    ~JournalDir() {
        ::close(fd);
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

JournalRecord put(uint64_t seq, std::string path, uint64_t offset, uint64_t size) {
    return {JournalRecord::Kind::put,
            seq,
            std::move(path),
            offset,
            size,
            1700000000123456789 + static_cast<int64_t>(seq),
            0xfeedface00000000ull + seq};
}

JournalRecord evict(uint64_t seq, std::string path) {
    JournalRecord r;
    r.kind = JournalRecord::Kind::evict;
    r.seq = seq;
    r.path = std::move(path);
    return r;
}

std::vector<JournalRecord> replay(const JournalDir& d, cache::JournalReplay& rep,
                                  uint64_t with_tag = tag) {
    std::vector<JournalRecord> got;
    int rv = cache::replay_journal(
        d.fd, "j", with_tag, [&](JournalRecord&& r) { got.push_back(std::move(r)); }, rep);
    CHECK(rv == 0);
    return got;
}

} // namespace

TEST_CASE("a record round-trips; every prefix of it and every flipped byte is refused") {
    for (const JournalRecord& r : {put(7, "class1/img 7.jpg", 8192, 110000), evict(9, "a/b")}) {
        std::string bytes;
        cache::encode(r, bytes);
        JournalRecord back;
        CHECK(cache::decode(bytes, back) == bytes.size());
        CHECK(back == r);
        for (size_t n = 0; n < bytes.size(); ++n)
            CHECK(cache::decode(std::string_view(bytes).substr(0, n), back) == 0);
        for (size_t i = 0; i < bytes.size(); ++i) {
            std::string bad = bytes;
            bad[i] = static_cast<char>(bad[i] ^ 0x40);
            CHECK(cache::decode(bad, back) == 0);
        }
    }
}

TEST_CASE("a written journal replays every record in order, and appends follow it") {
    JournalDir d;
    std::vector<JournalRecord> records{put(1, "a", 0, 10), put(2, "b", 4096, 5000), evict(3, "a")};
    REQUIRE(cache::write_journal(d.fd, "j", tag, records) == 0);
    CHECK_FALSE(fs::exists(d.path / "j.tmp"));
    struct stat st;
    REQUIRE(::stat((d.path / "j").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);

    cache::JournalAppender app;
    REQUIRE(app.open(d.fd, "j") == 0);
    CHECK(app.append(put(4, "c", 12288, 1)) == 0);
    CHECK_FALSE(app.failed());
    app.close();
    CHECK(app.append(put(5, "d", 0, 1)) == -EBADF);
    records.push_back(put(4, "c", 12288, 1));

    cache::JournalReplay rep;
    CHECK(replay(d, rep) == records);
    CHECK(rep.found);
    CHECK(rep.records == 4);
    CHECK(rep.ignored_bytes == 0);
}

TEST_CASE("a journal torn mid-record keeps every record before the tear") {
    JournalDir d;
    std::vector<JournalRecord> records;
    for (uint64_t i = 1; i <= 5; ++i)
        records.push_back(put(i, "f" + std::to_string(i), i * 4096, i));
    REQUIRE(cache::write_journal(d.fd, "j", tag, records) == 0);
    auto full = fs::file_size(d.path / "j");
    std::string last;
    cache::encode(records.back(), last);

    for (uint64_t cut : {uint64_t{1}, uint64_t{9}, last.size() - 1}) {
        REQUIRE(cache::write_journal(d.fd, "j", tag, records) == 0);
        fs::resize_file(d.path / "j", full - cut);
        cache::JournalReplay rep;
        auto got = replay(d, rep);
        CHECK(got == std::vector<JournalRecord>(records.begin(), records.end() - 1));
        CHECK(rep.ignored_bytes == last.size() - cut);
    }
}

TEST_CASE("a corrupt record ends the replay: later records are not trusted") {
    JournalDir d;
    std::vector<JournalRecord> records{put(1, "a", 0, 1), put(2, "b", 4096, 1),
                                       put(3, "c", 8192, 1)};
    REQUIRE(cache::write_journal(d.fd, "j", tag, records) == 0);
    std::string first;
    cache::encode(records[0], first);
    int fd = ::open((d.path / "j").c_str(), O_WRONLY);
    REQUIRE(fd >= 0);
    // A byte inside the second record's path.
    off_t at = static_cast<off_t>(cache::journal_header_size + first.size() + 50);
    REQUIRE(::pwrite(fd, "#", 1, at) == 1);
    ::close(fd);
    cache::JournalReplay rep;
    CHECK(replay(d, rep) == std::vector<JournalRecord>{records[0]});
    CHECK(rep.ignored_bytes > 0);
}

TEST_CASE("another dataset's journal, a bad header and a missing file give nothing") {
    JournalDir d;
    cache::JournalReplay rep;
    CHECK(replay(d, rep).empty());
    CHECK_FALSE(rep.found);

    REQUIRE(cache::write_journal(d.fd, "j", tag, {put(1, "a", 0, 1)}) == 0);
    CHECK(replay(d, rep, tag + 1).empty());
    CHECK_FALSE(rep.found);

    fs::resize_file(d.path / "j", cache::journal_header_size - 1);
    CHECK(replay(d, rep).empty());
    CHECK_FALSE(rep.found);

    REQUIRE(cache::write_journal(d.fd, "j", tag, {}) == 0);
    CHECK(replay(d, rep).empty());
    CHECK(rep.found);
    CHECK(rep.ignored_bytes == 0);
}

TEST_CASE("a journal of many megabytes replays whole across read chunks") {
    JournalDir d;
    std::vector<JournalRecord> records;
    for (uint64_t i = 1; i <= 40000; ++i)
        records.push_back(
            put(i, "train/n" + std::string(60 + i % 70, 'x') + std::to_string(i), i * 4096, i));
    REQUIRE(cache::write_journal(d.fd, "j", tag, records) == 0);
    REQUIRE(fs::file_size(d.path / "j") > 3u << 20);
    cache::JournalReplay rep;
    auto got = replay(d, rep);
    CHECK(got.size() == records.size());
    CHECK(got == records);
    CHECK(rep.ignored_bytes == 0);
}

TEST_CASE("the fold keeps each path's latest change by sequence number") {
    cache::JournalFold fold;
    // Appended without the tier's lock, records can arrive out of order.
    fold.apply(put(5, "a", 0, 1));
    fold.apply(evict(3, "a")); // older than the put: does not hide it
    fold.apply(put(2, "b", 4096, 1));
    fold.apply(evict(4, "b")); // newer: hides it
    fold.apply(put(6, "c", 8192, 1));
    fold.apply(evict(7, "c"));
    fold.apply(put(9, "c", 12288, 2)); // put again after its evict
    fold.apply(put(8, "d", 16384, 1));
    fold.apply(put(1, "d", 20480, 1)); // an older put of the same path
    CHECK(fold.max_seq() == 9);
    auto live = fold.take_live();
    CHECK(live.size() == 3);
    REQUIRE(live.contains("a"));
    CHECK(live["a"].seq == 5);
    CHECK(live["c"].offset == 12288);
    CHECK(live["d"].offset == 16384);
    CHECK_FALSE(live.contains("b"));
    CHECK(fold.take_live().empty());
}
