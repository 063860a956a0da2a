// SPDX-License-Identifier: MIT
// What the SSD tier's tests share: a cache directory on local disk, a file
// table whose bytes depend on each file's number, the tier's options, and
// the checks every disabled tier must pass.
#pragma once

#include "clairfs/cache/ssd_tier.hpp"
#include "dataset.hpp"
#include "sizes.hpp"

#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace clairfs::test {

// Under /var/tmp: it is on disk, where O_DIRECT and fallocate are real.
struct CacheDir {
    std::filesystem::path path;
    CacheDir() {
        char t[] = "/var/tmp/clairfs-ssd-XXXXXX";
        REQUIRE(mkdtemp(t));
        path = t;
    }
    ~CacheDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    size_t count(const std::string& suffix) const {
        size_t n = 0;
        for (const auto& e : std::filesystem::directory_iterator(path))
            n += e.path().string().ends_with(suffix) ? 1 : 0;
        return n;
    }
};

// The mount's files by NodeId; a test changes it between opens.
struct Table {
    std::vector<cache::FileIdentity> files;

    explicit Table(const std::vector<uint64_t>& sizes) {
        for (size_t i = 0; i < sizes.size(); ++i)
            files.push_back({"dir" + std::to_string(i % 4) + "/f" + std::to_string(i) + ".bin",
                             sizes[i], 1700000000000000000 + static_cast<int64_t>(i)});
    }
    cache::DescribeFile describe() const {
        return [this](index::NodeId id, cache::FileIdentity& out) {
            if (id >= files.size() || files[id].path.empty()) return false;
            out = files[id];
            return true;
        };
    }
    // The bytes of file `id`: they depend on its path's number, so a file
    // moved to another NodeId at a remount still has the same bytes.
    cache::BlobRef blob(index::NodeId id) const { return make_blob(number(id), files[id].size); }
    std::string bytes(index::NodeId id) const {
        return test::sample_bytes(number(id), files[id].size);
    }
    size_t number(index::NodeId id) const {
        const std::string& p = files[id].path;
        return std::stoul(p.substr(p.find("/f") + 2));
    }
    static cache::BlobRef make_blob(size_t n, uint64_t size) {
        auto b = cache::Blob::make(size);
        std::string s = test::sample_bytes(n, size);
        std::memcpy(b->bytes.get(), s.data(), size);
        return b;
    }
};

inline cache::SsdOptions options(const std::filesystem::path& dir, uint64_t capacity, const Table& t) {
    cache::SsdOptions o;
    o.dir = dir.string();
    o.capacity = capacity;
    o.dataset = "/datasets/imagenet";
    o.describe = t.describe();
    o.nodes = t.files.size();
    return o;
}
inline void check_disabled(cache::SsdTier& t, const std::string& starts) {
    auto s = t.state();
    CHECK_FALSE(s.enabled);
    CHECK(s.error.starts_with(starts));
    CHECK(s.error.find('\n') == std::string::npos);
    CHECK(t.health().error == s.error);
    CHECK_FALSE(t.health().enabled);
    Table other({10});
    uint64_t misses = t.stats().misses;
    CHECK(t.get(0) == nullptr);
    CHECK(t.peek(0) == nullptr);
    CHECK_FALSE(t.put(0, other.blob(0)));
    CHECK_FALSE(t.contains(0));
    CHECK(t.evict(0) == 0);
    std::vector<index::NodeId> held;
    t.held(held);
    CHECK(held.empty());
    CHECK(t.stats().misses == misses + 1);
    CHECK(t.stats().capacity == 0);
}

// The whole file behind `fd`, read from its start with pread (the
// descriptor's offset is left alone).
inline std::string read_fd(int fd) {
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()))) > 0;)
        out.append(buf, static_cast<size_t>(n));
    return out;
}

// The path of the (last listed) entry file of `size` bytes in the tier's
// entries directory, or "" if none is.
inline std::string entry_file_of_size(const cache::SsdTier& ssd, uint64_t size) {
    std::string path;
    for (const auto& e : std::filesystem::directory_iterator(ssd.state().entries_dir))
        if (std::filesystem::file_size(e.path()) == size) path = e.path();
    return path;
}
} // namespace clairfs::test
