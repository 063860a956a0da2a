// SPDX-License-Identifier: MIT
// An LMDB's samples: the main database's values, in LMDB's key order (the
// order an MDB_NEXT cursor walks: bytewise, a shorter key before the keys it
// begins, which is Python's sorted() of bytes keys). liblmdb returns each
// value as a pointer into its read-only map of data.mdb, inline in a leaf
// page or in its own overflow pages alike; the value's file offset is that
// pointer less the map's address.
#include "ranges_writers.hpp"

#include <cstdio>
#include <cstring>
#include <lmdb.h>
#include <memory>
#include <sys/stat.h>

namespace clairfs::ranges {
namespace {

struct EnvClose {
    void operator()(MDB_env* e) const { mdb_env_close(e); }
};
struct TxnAbort {
    void operator()(MDB_txn* t) const { mdb_txn_abort(t); }
};
struct CursorClose {
    void operator()(MDB_cursor* c) const { mdb_cursor_close(c); }
};

// The address data.mdb's byte 0 has in the map holding `inside`. liblmdb
// does not give its map's address: mdb_env_info's me_mapaddr is the address
// recorded in the meta page (0.9.x) or the map's only under MDB_FIXEDMAP
// (later versions), so NULL for an ordinary environment. /proc/self/maps
// has it: the mapping that holds a value LMDB returned is its map of
// data.mdb, and its start less its file offset is byte 0 (whichever piece of
// the mapping the kernel split it into holds the value). Matching data.mdb's
// device and inode instead can fail on overlayfs and btrfs subvolumes,
// whose maps lines may show another device than stat does.
bool map_base(const void* inside, uintptr_t& base) {
    FILE* maps = fopen("/proc/self/maps", "re");
    if (!maps) return false;
    auto at = reinterpret_cast<uintptr_t>(inside);
    unsigned long long start = 0, end = 0, pgoff = 0, inode = 0;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, maps)) {
        found = sscanf(line, "%llx-%llx %*s %llx %*s %llu", &start, &end, &pgoff, &inode) == 4 &&
                inode != 0 && start <= at && at < end;
    }
    fclose(maps);
    if (found) base = static_cast<uintptr_t>(start - pgoff);
    return found;
}

std::string lmdb_error(const std::string& what, int rc) {
    return what + ": " + mdb_strerror(rc);
}

// A failure to open the environment: what the file is not, or why it could
// not be read.
Failure open_failure(const std::string& dir, const std::string& file, int rc) {
    if (rc == MDB_INVALID) return refused(file + " is not an LMDB data file");
    if (rc == MDB_VERSION_MISMATCH) return refused(lmdb_error(file, rc));
    return failure(lmdb_error("cannot open the LMDB environment " + dir, rc));
}

// A key whose value is the size of an MDB_db record (two 16-bit fields, a
// 32-bit pad and five size_t) may be a named database's: mdb_dbi_open says
// which, since only a named database's node opens (a plain value is
// MDB_INCOMPATIBLE). Its name is a C string, so a key holding a NUL byte is
// never one.
bool names_database(MDB_txn* txn, const MDB_val& key, const MDB_val& value) {
    constexpr size_t db_record = 8 + 5 * sizeof(size_t);
    if (value.mv_size != db_record || memchr(key.mv_data, 0, key.mv_size)) return false;
    std::string name(static_cast<const char*>(key.mv_data), key.mv_size);
    MDB_dbi sub;
    return mdb_dbi_open(txn, name.c_str(), 0, &sub) == 0;
}

class Walk {
public:
    Walk(std::string dir, std::string file) : dir_(std::move(dir)), file_(std::move(file)) {}

    Failure run(Progress& progress, std::vector<Extent>& out) {
        if (auto f = open(); !f.message.empty()) return f;
        if (auto f = main_database(); !f.message.empty()) return f;
        MDB_cursor* c = nullptr;
        if (int rc = mdb_cursor_open(txn_.get(), dbi_, &c))
            return failure(lmdb_error(dir_, rc));
        std::unique_ptr<MDB_cursor, CursorClose> cursor(c);
        MDB_val key, value;
        int rc = mdb_cursor_get(c, &key, &value, MDB_FIRST);
        for (; rc == 0; rc = mdb_cursor_get(c, &key, &value, MDB_NEXT)) {
            if (out.empty() && !map_base(value.mv_data, base_))
                return failure("cannot find LMDB's map of " + file_ + " in /proc/self/maps");
            if (names_database(txn_.get(), key, value))
                return refused(dir_ + " has named databases ('" +
                               std::string(static_cast<const char*>(key.mv_data), key.mv_size) +
                               "'); clairfs ranges reads an environment with only the main one");
            out.push_back({reinterpret_cast<uintptr_t>(value.mv_data) - base_, value.mv_size});
            if (out.size() == 1) first_ = value;
            last_ = value;
            progress.add();
        }
        if (rc != MDB_NOTFOUND) return failure(lmdb_error("cannot read " + file_, rc));
        if (out.empty()) return refused(dir_ + ": the LMDB's main database has no keys");
        return check(out);
    }

private:
    Failure open() {
        if (auto f = data_.open(file_); !f.message.empty()) return f;
        MDB_env* e = nullptr;
        if (int rc = mdb_env_create(&e)) return failure(lmdb_error(dir_, rc));
        env_.reset(e);
        // One named database at most is ever opened: the first one found,
        // which refuses the environment.
        mdb_env_set_maxdbs(e, 1);
        // MDB_NOLOCK: no lock.mdb is created or needed, so a read-only
        // dataset directory will do (and nothing writes it meanwhile).
        // MDB_NORDAHEAD: the walk reads branch and leaf pages only; readahead
        // would pull the values' overflow pages through the page cache too.
        if (int rc = mdb_env_open(e, dir_.c_str(), MDB_RDONLY | MDB_NOLOCK | MDB_NORDAHEAD, 0))
            return open_failure(dir_, file_, rc);
        MDB_txn* t = nullptr;
        if (int rc = mdb_txn_begin(e, nullptr, MDB_RDONLY, &t))
            return failure(lmdb_error(dir_, rc));
        txn_.reset(t);
        return {};
    }

    Failure main_database() {
        if (int rc = mdb_dbi_open(txn_.get(), nullptr, 0, &dbi_))
            return failure(lmdb_error(dir_, rc));
        unsigned flags = 0;
        if (int rc = mdb_dbi_flags(txn_.get(), dbi_, &flags))
            return failure(lmdb_error(dir_, rc));
        if (flags & MDB_DUPSORT)
            return refused(dir_ + ": the main database is DUPSORT (several values per key); "
                                  "clairfs ranges takes one value per key");
        return {};
    }

    // The first and last values, read from the file where the walk put
    // them: proof that the map address held.
    Failure check(const std::vector<Extent>& out) const {
        if (auto f = check_bytes(data_.fd, file_, 0, out.front(), first_.mv_data);
            !f.message.empty())
            return f;
        return check_bytes(data_.fd, file_, out.size() - 1, out.back(), last_.mv_data);
    }

    std::string dir_, file_;
    DataFile data_;
    std::unique_ptr<MDB_env, EnvClose> env_;
    std::unique_ptr<MDB_txn, TxnAbort> txn_; // after env_, so ended before it closes
    MDB_dbi dbi_ = 0;
    uintptr_t base_ = 0;
    MDB_val first_{}, last_{};
};

} // namespace

Failure lmdb_extents(const std::string& dir, Progress& progress, std::vector<Extent>& out) {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0)
        return failure("cannot open " + dir + ": " + strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return refused(dir + " is not a directory: give the LMDB environment's directory, the "
                             "one holding data.mdb");
    return Walk(dir, dir + "/data.mdb").run(progress, out);
}

} // namespace clairfs::ranges
