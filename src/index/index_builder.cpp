// SPDX-License-Identifier: MIT
// Freezes a RawTree into an Index: breadth-first layout so that each
// directory's children are one contiguous, byte-sorted run of nodes.
#include "clairfs/index/index.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>
#include <sys/stat.h>
#include <unordered_map>

namespace clairfs::index {

class IndexBuilder {
public:
    explicit IndexBuilder(Index& out) : out_(out) {}

    void build(RawTree& tree) {
        count(tree.root);
        out_.nodes_.reserve(node_count_);
        out_.arena_.reserve(arena_bytes_);
        append(tree.root, root_id);
        pending_.push_back({root_id, &tree.root});
        while (!pending_.empty()) {
            auto [id, raw] = pending_.front();
            pending_.pop_front();
            place_children(id, *raw);
        }
    }

private:
    struct Pending {
        NodeId id;
        RawEntry* raw;
    };

    Index& out_;
    std::deque<Pending> pending_;
    struct AttrsHash {
        size_t operator()(const Attrs& a) const {
            uint64_t x = (uint64_t{a.uid} << 32 | a.gid) * 0x9e3779b97f4a7c15ULL;
            return static_cast<size_t>(x ^ (uint64_t{a.blksize} << 20) ^ a.block_unit);
        }
    };
    std::unordered_map<Attrs, uint32_t, AttrsHash> attr_ids_;
    size_t node_count_ = 0;
    size_t arena_bytes_ = 0;

    void count(const RawEntry& e) {
        ++node_count_;
        arena_bytes_ += e.name.size() + e.link_target.size();
        if (e.dir)
            for (auto& c : e.dir->entries) count(c);
    }

    // The smallest allocation unit that explains st_blocks, trying the
    // common ones first so that files of one file system share one Attrs;
    // 0 if none does.
    static uint32_t block_unit(const RawEntry& e, uint64_t size) {
        for (uint64_t unit : {uint64_t{4096}, uint64_t{e.blksize}, uint64_t{512}, uint64_t{1024},
                              uint64_t{2048}, uint64_t{8192}, uint64_t{16384}, uint64_t{65536}}) {
            if (unit < 512 || unit % 512 != 0 || unit > UINT32_MAX) continue;
            if ((size + unit - 1) / unit * (unit / 512) == e.blocks) return static_cast<uint32_t>(unit);
        }
        return 0;
    }

    uint32_t attrs_of(const RawEntry& e, uint64_t size) {
        Attrs a{e.uid, e.gid, e.blksize, block_unit(e, size)};
        auto [it, inserted] =
            attr_ids_.try_emplace(a, static_cast<uint32_t>(out_.attrs_.size()));
        if (inserted) out_.attrs_.push_back(a);
        if (a.block_unit == 0 && e.blocks != 0)
            out_.odd_blocks_.emplace(static_cast<NodeId>(out_.nodes_.size()), e.blocks);
        return it->second;
    }

    void append(RawEntry& e, NodeId parent) {
        if (out_.nodes_.size() >= std::numeric_limits<NodeId>::max())
            throw std::length_error("more than 2^32 entries in one mount");
        if (e.name.size() > std::numeric_limits<uint16_t>::max())
            throw std::length_error("name longer than 65535 bytes: " + e.name.substr(0, 64));
        Node n{};
        n.mode = e.mode;
        n.size = S_ISLNK(e.mode) ? e.link_target.size() : e.size;
        n.mtime_sec = e.mtime_sec;
        n.mtime_nsec = e.mtime_nsec;
        n.parent = parent;
        n.attrs = attrs_of(e, n.size);
        n.nlink = 1;
        n.name_off = out_.arena_.size();
        n.name_len = static_cast<uint16_t>(e.name.size());
        n.scan_errno = e.dir ? static_cast<uint16_t>(e.dir->scan_errno) : 0;
        out_.arena_.insert(out_.arena_.end(), e.name.begin(), e.name.end());
        out_.arena_.insert(out_.arena_.end(), e.link_target.begin(), e.link_target.end());
        out_.nodes_.push_back(n);
        tally(n);
    }

    void tally(const Node& n) {
        auto& t = out_.totals_;
        if (S_ISREG(n.mode)) {
            ++t.files;
            t.bytes += n.size;
        } else if (S_ISDIR(n.mode)) {
            ++t.dirs;
        } else if (S_ISLNK(n.mode)) {
            ++t.symlinks;
        }
    }

    void place_children(NodeId id, RawEntry& raw) {
        auto& kids = raw.dir->entries;
        // Byte order (memcmp), which is what Python's sorted() gives for
        // UTF-8 names and what lookup's binary search relies on.
        std::sort(kids.begin(), kids.end(),
                  [](const RawEntry& a, const RawEntry& b) { return a.name < b.name; });
        auto first = static_cast<NodeId>(out_.nodes_.size());
        uint32_t subdirs = 0;
        for (auto& k : kids) {
            append(k, id);
            if (k.dir) {
                ++subdirs;
                pending_.push_back({static_cast<NodeId>(out_.nodes_.size() - 1), &k});
            }
        }
        Node& dir = out_.nodes_[id];
        dir.first_child = first;
        dir.child_count = static_cast<uint32_t>(kids.size());
        dir.nlink = 2 + subdirs;
    }
};

Index Index::build(RawTree tree) {
    if (!tree.root.dir) tree.root.dir = std::make_unique<RawDir>();
    Index out;
    IndexBuilder(out).build(tree);
    out.nodes_[root_id].parent = root_id;
    return out;
}

} // namespace clairfs::index
