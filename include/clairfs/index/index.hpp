// SPDX-License-Identifier: MIT
// The immutable in-memory view of the backing tree. Built once at mount;
// every lookup, getattr and readdir is answered from here so metadata never
// touches the shared file system again. Thread-safe because it never changes.
#pragma once

#include "clairfs/index/node.hpp"
#include "clairfs/index/raw_tree.hpp"

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace clairfs::index {

struct IndexTotals {
    uint64_t files = 0;
    uint64_t dirs = 0;
    uint64_t symlinks = 0;
    uint64_t bytes = 0; // sum of regular file sizes
};

class Index {
public:
    // Freezes a raw tree: sorts every directory by name bytes and lays the
    // nodes out breadth-first so each directory's children are contiguous.
    static Index build(RawTree tree);

    const Node& node(NodeId id) const { return nodes_[id]; }
    bool contains(NodeId id) const { return id < nodes_.size(); }
    size_t size() const { return nodes_.size(); }

    std::string_view name(const Node& n) const { return {arena_.data() + n.name_off, n.name_len}; }
    std::string_view link_target(const Node& n) const {
        return {arena_.data() + n.name_off + n.name_len, static_cast<size_t>(n.size)};
    }
    std::span<const Node> children(const Node& dir) const {
        return {nodes_.data() + dir.first_child, dir.child_count};
    }
    NodeId id_of(const Node& n) const { return static_cast<NodeId>(&n - nodes_.data()); }

    // Child of `dir` called `name`, or nullptr. O(log children).
    const Node* lookup(const Node& dir, std::string_view name) const;

    // Path relative to the root ("" for the root itself), for openat().
    void relative_path(NodeId id, std::string& out) const;

    // Node at a slash-separated relative path, not following symlinks.
    const Node* find(std::string_view relative) const;

    const Attrs& attrs(const Node& n) const { return attrs_[n.attrs]; }
    // st_blocks as the backing reported it at the scan.
    uint64_t blocks(const Node& n) const;
    const IndexTotals& totals() const { return totals_; }
    size_t memory_bytes() const;

private:
    std::vector<Node> nodes_;
    std::vector<char> arena_;
    std::vector<Attrs> attrs_;
    // st_blocks of the nodes no allocation unit explains (sparse files,
    // data stored inline in the inode): few on any real dataset.
    std::unordered_map<NodeId, uint64_t> odd_blocks_;
    IndexTotals totals_;

    friend class IndexBuilder;
};

} // namespace clairfs::index
