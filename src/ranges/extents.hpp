// SPDX-License-Identifier: MIT
// What `clairfs ranges` learns from one data file before it becomes a
// ranges manifest (layout/ranges_manifest.hpp): sample i is extents[i], bytes
// [offset, offset + length) of that file. One writer per kind of file
// (lmdb_ranges.cpp, hdf5_ranges.cpp, packed_ranges.cpp) fills the extents;
// check_extents then holds them to what a manifest may say.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::ranges {

struct Extent {
    uint64_t offset = 0;
    uint64_t length = 0;
};

// Why a writer stopped. `message` is one line naming the file; `usage` says
// the request or the file's contents are what is wrong (exit 2: not an LMDB,
// a compressed dataset, a remainder), not that the file could not be read
// (exit 1).
struct Failure {
    std::string message; // empty on success
    bool usage = false;
};

// Could not be done: a file that cannot be read or written (exit 1).
inline Failure failure(std::string message) {
    return {std::move(message), false};
}
// Will not be done: the request, or what the file holds (exit 2).
inline Failure refused(std::string message) {
    return {std::move(message), true};
}

// A data file open for reading; closed when it goes.
struct DataFile {
    int fd = -1;
    uint64_t size = 0;

    DataFile() = default;
    DataFile(const DataFile&) = delete;
    DataFile& operator=(const DataFile&) = delete;
    ~DataFile();
    // An empty Failure, or why `path` cannot be read.
    Failure open(const std::string& path);
};

// Counts samples as a writer finds them and, on a terminal, shows the count
// at most once a second, so a walk over millions of keys is seen to move.
class Progress {
public:
    explicit Progress(bool show) : show_(show) {}
    void add() {
        if (++count_ % 4096 == 0 && show_) tick();
    }
    uint64_t count() const { return count_; }
    // Ends the progress line (if one was shown) with `line`, always printed.
    void finish(const std::string& line);

private:
    void tick();
    bool show_;
    bool shown_ = false;
    uint64_t count_ = 0;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Refuses extents a manifest must not hold: an empty sample, one of 4 GiB or
// more, one that ends past `file_size`, two that overlap, or more samples
// than clairfs numbers. `file` names the file in the message.
Failure check_extents(const std::string& file, const std::vector<Extent>& extents,
                      uint64_t file_size);

// Whether bytes [e.offset, e.offset + e.length) of `fd` are `expected`: the
// writers' check, on their first and last sample, that the offsets they
// computed hold what the library read (a misread map address or HDF5 base
// address would show here, not in a training job).
Failure check_bytes(int fd, const std::string& file, uint64_t sample, const Extent& e,
                    const void* expected);

} // namespace clairfs::ranges
