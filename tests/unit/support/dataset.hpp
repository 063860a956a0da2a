// SPDX-License-Identifier: MIT
// A small dataset on disk, scanned into an Index, with its backing root open
// the way a mount holds it; every file's bytes depend on its number, so a
// read that returns the wrong file or the wrong offset is caught.
#pragma once

#include "clairfs/cache/blob.hpp"
#include "clairfs/index/index.hpp"
#include "disk_tree.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fstream>
#include <future>
#include <initializer_list>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <vector>

namespace clairfs::test {

inline std::string sample_bytes(size_t n, size_t size) {
    std::string s(size, '\0');
    for (size_t k = 0; k < size; ++k) s[k] = static_cast<char>((n * 131 + k * 7 + k / 251) & 0xff);
    return s;
}

inline std::string sample_name(size_t n) {
    return "class" + std::to_string(n % 3) + "/sample" + std::to_string(n) + ".bin";
}

struct Dataset {
    DiskTree tree;
    std::vector<std::string> contents; // by sample number
    index::Index idx;
    std::vector<index::NodeId> ids; // by sample number
    int root_fd = -1;

    // `n` files of assorted sizes (the first one empty when `with_empty`).
    explicit Dataset(size_t n, bool with_empty = false, size_t max_size = 9000) {
        for (size_t i = 0; i < n; ++i) {
            size_t size = (with_empty && i == 0) ? 0 : 1 + (i * 2654435761u) % max_size;
            contents.push_back(sample_bytes(i, size));
            rewrite(i, contents.back());
        }
        rescan();
        root_fd = ::open(tree.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        REQUIRE(root_fd >= 0);
    }
    ~Dataset() { ::close(root_fd); }

    void rewrite(size_t n, std::string_view bytes) {
        fs::create_directories((tree.root / sample_name(n)).parent_path());
        std::ofstream(tree.root / sample_name(n), std::ios::binary | std::ios::trunc)
            .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    fs::path path(size_t n) const { return tree.root / sample_name(n); }
    // Samples 0, 1, ... rewritten at these sizes (their bytes still depend
    // on their numbers), and the tree scanned again.
    void resize(std::initializer_list<size_t> sizes) {
        size_t n = 0;
        for (size_t size : sizes) {
            contents.at(n) = sample_bytes(n, size);
            rewrite(n, contents[n]);
            ++n;
        }
        rescan();
    }

    // Looked up once: tests poll with id() in tight loops.
    void rescan() {
        idx = tree.scan();
        ids.clear();
        for (size_t i = 0; i < contents.size(); ++i) {
            const index::Node* node = idx.find(sample_name(i));
            REQUIRE(node);
            ids.push_back(idx.id_of(*node));
        }
    }
    index::NodeId id(size_t n) const { return ids.at(n); }
    const index::Node& node(size_t n) const { return idx.node(id(n)); }
};

// The files of directory `dir` (say "class0/"), in byte order of their
// names: the order a sequential loader over a sorted listing opens them
// (the fixture's .bin files are no ImageFolder's images).
inline std::vector<index::NodeId> sorted_ids(const Dataset& d, std::string_view dir) {
    std::vector<size_t> in;
    for (size_t i = 0; i < d.ids.size(); ++i)
        if (sample_name(i).starts_with(dir)) in.push_back(i);
    std::sort(in.begin(), in.end(), [](size_t a, size_t b) { return sample_name(a) < sample_name(b); });
    std::vector<index::NodeId> ids;
    for (size_t i : in) ids.push_back(d.ids[i]);
    return ids;
}

inline std::string_view view(const cache::BlobRef& b) {
    REQUIRE(b);
    return {b->bytes.get(), static_cast<size_t>(b->size)};
}

// Runs `f` on its own thread; a hang fails the test run at once instead of
// stalling CI until the meson timeout, which would not say what hung.
template <class F> void within(std::chrono::seconds limit, const char* what, F&& f) {
    auto fut = std::async(std::launch::async, std::forward<F>(f));
    if (fut.wait_for(limit) == std::future_status::timeout) {
        std::fprintf(stderr, "HANG: %s did not finish within %llds\n", what,
                     static_cast<long long>(limit.count()));
        std::fflush(stderr);
        std::_Exit(3); // the hung thread cannot be joined, so no orderly exit
    }
    fut.get(); // rethrows what the body threw
}

// Polls `cond` until true or `limit`; returns its last value.
template <class Cond>
bool eventually(Cond&& cond, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > end) return cond();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

} // namespace clairfs::test
