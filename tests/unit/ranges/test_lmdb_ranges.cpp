// SPDX-License-Identifier: MIT
// clairfs ranges lmdb against environments liblmdb itself writes: every
// extent's bytes in data.mdb are the value mdb_get returns for the i-th key.
#include "ranges/ranges_writers.hpp"
#include "ranges_fixtures.hpp"

#include <algorithm>
#include <cstdio>
#include <lmdb.h>
#include <map>
#include <numeric>

using namespace clairfs;
using namespace clairfs::test;

namespace {

// A writable environment, closed (and so flushed) when it goes.
class Env {
public:
    explicit Env(const fs::path& dir, unsigned maxdbs = 0) {
        fs::create_directories(dir);
        REQUIRE(mdb_env_create(&env_) == 0);
        REQUIRE(mdb_env_set_mapsize(env_, 256u << 20) == 0);
        REQUIRE(mdb_env_set_maxdbs(env_, maxdbs) == 0);
        REQUIRE(mdb_env_open(env_, dir.c_str(), 0, 0644) == 0);
    }
    ~Env() { mdb_env_close(env_); }

    // Puts every (key, value) into database `name` (nullptr: the main one)
    // opened with `flags`, in one transaction.
    void put(const std::vector<std::pair<std::string, std::string>>& kv,
             const char* name = nullptr, unsigned flags = 0) {
        MDB_txn* txn = nullptr;
        MDB_dbi dbi;
        REQUIRE(mdb_txn_begin(env_, nullptr, 0, &txn) == 0);
        REQUIRE(mdb_dbi_open(txn, name, flags | MDB_CREATE, &dbi) == 0);
        for (const auto& [k, v] : kv) {
            MDB_val key{k.size(), const_cast<char*>(k.data())};
            MDB_val val{v.size(), const_cast<char*>(v.data())};
            REQUIRE(mdb_put(txn, dbi, &key, &val, 0) == 0);
        }
        REQUIRE(mdb_txn_commit(txn) == 0);
    }

private:
    MDB_env* env_ = nullptr;
};

// The value liblmdb returns for `key`, read in an environment of its own.
std::string lmdb_get(const fs::path& dir, const std::string& key) {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi dbi;
    REQUIRE(mdb_env_create(&env) == 0);
    REQUIRE(mdb_env_open(env, dir.c_str(), MDB_RDONLY | MDB_NOLOCK, 0) == 0);
    REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
    REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
    MDB_val k{key.size(), const_cast<char*>(key.data())}, v;
    REQUIRE(mdb_get(txn, dbi, &k, &v) == 0);
    std::string out(static_cast<const char*>(v.mv_data), v.mv_size);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return out;
}

std::string key_of(int i) {
    char k[16];
    snprintf(k, sizeof k, "%08d", i);
    return k;
}

ranges::Failure extents_of(const fs::path& dir, std::vector<ranges::Extent>& out) {
    ranges::Progress quiet(false);
    return ranges::lmdb_extents(dir.string(), quiet, out);
}

} // namespace

TEST_CASE("lmdb: inline and overflow values of keys inserted in random order") {
    DiskTree t;
    fs::path dir = t.root / "train.lmdb";
    std::mt19937_64 rng(7);
    std::vector<int> order(3000);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    // Small values share leaf pages; above ~2 KiB (a quarter of a 4 KiB
    // page, less headers) a value gets overflow pages of its own; 48 bytes
    // is the size of a named database's record, which must not be taken
    // for one.
    std::map<std::string, std::string> values;
    std::vector<std::pair<std::string, std::string>> kv;
    for (int i : order) {
        size_t size = i % 3 == 0 ? 2100 + rng() % 20000 : i % 3 == 1 ? 1 + rng() % 200 : 48;
        kv.emplace_back(key_of(i), random_bytes(rng, size));
        values[kv.back().first] = kv.back().second;
    }
    Env(dir).put(kv);

    std::vector<ranges::Extent> out;
    REQUIRE(extents_of(dir, out).message == "");
    REQUIRE(out.size() == 3000);
    uint64_t file_size = fs::file_size(dir / "data.mdb");
    CHECK(ranges::check_extents("data.mdb", out, file_size).message == "");
    size_t i = 0;
    for (const auto& [key, value] : values) {
        CHECK(key == key_of(static_cast<int>(i))); // LMDB's order: sorted bytes
        std::string got = bytes_at(dir / "data.mdb", out[i]);
        CHECK(got == value);
        CHECK(got == lmdb_get(dir, key));
        ++i;
    }
}

TEST_CASE("lmdb: keys in bytewise order, a prefix before its extensions") {
    DiskTree t;
    fs::path dir = t.root / "db";
    Env(dir).put({{"b", "3"}, {"a", "1"}, {"ab", "2"}, {"\xff", "4"}, {"B", "0"}});
    std::vector<ranges::Extent> out;
    REQUIRE(extents_of(dir, out).message == "");
    std::string seen;
    for (const auto& e : out) seen += bytes_at(dir / "data.mdb", e);
    CHECK(seen == "01234");
}

TEST_CASE("lmdb: refusals") {
    DiskTree t;
    std::vector<ranges::Extent> out;

    SUBCASE("a DUPSORT main database") {
        Env(t.root / "dup").put({{"a", "1"}, {"a", "2"}}, nullptr, MDB_DUPSORT);
        auto f = extents_of(t.root / "dup", out);
        CHECK(f.usage);
        CHECK(f.message.find("DUPSORT") != std::string::npos);
    }
    SUBCASE("named databases") {
        Env env(t.root / "named", 2);
        env.put({{"00000000", std::string(48, 'v')}});
        env.put({{"k", "v"}}, "labels");
        auto f = extents_of(t.root / "named", out);
        CHECK(f.usage);
        CHECK(f.message.find("named databases ('labels')") != std::string::npos);
    }
    SUBCASE("an environment with no keys") {
        Env(t.root / "empty").put({});
        auto f = extents_of(t.root / "empty", out);
        CHECK(f.usage);
        CHECK(f.message.find("no keys") != std::string::npos);
    }
    SUBCASE("a data.mdb that is not an LMDB") {
        write_bytes(t.root / "junk" / "data.mdb", std::string(16384, 'x'));
        auto f = extents_of(t.root / "junk", out);
        CHECK(f.usage);
        CHECK(f.message.find("is not an LMDB data file") != std::string::npos);
    }
    SUBCASE("a file instead of the directory") {
        write_bytes(t.root / "data.mdb", "x");
        auto f = extents_of(t.root / "data.mdb", out);
        CHECK(f.usage);
        CHECK(f.message.find("is not a directory") != std::string::npos);
    }
    SUBCASE("a directory without data.mdb cannot be read") {
        fs::create_directories(t.root / "none");
        auto f = extents_of(t.root / "none", out);
        CHECK_FALSE(f.usage);
        CHECK(f.message.find("cannot open") != std::string::npos);
    }
}
