// SPDX-License-Identifier: MIT
#include "clairfs/index/index.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::index {

const Node* Index::lookup(const Node& dir, std::string_view want) const {
    auto kids = children(dir);
    auto it = std::lower_bound(kids.begin(), kids.end(), want,
                               [this](const Node& n, std::string_view w) { return name(n) < w; });
    if (it == kids.end() || name(*it) != want) return nullptr;
    return &*it;
}

void Index::relative_path(NodeId id, std::string& out) const {
    // Walk up collecting components, then emit them root-first; depth is
    // small, so a fixed stack avoids a heap allocation per open().
    NodeId chain[256];
    size_t depth = 0;
    std::vector<NodeId> deep; // only for trees deeper than 256
    for (NodeId cur = id; cur != root_id; cur = nodes_[cur].parent) {
        if (depth < std::size(chain))
            chain[depth++] = cur;
        else
            deep.push_back(cur);
    }
    out.clear();
    auto emit = [&](NodeId n) {
        if (!out.empty()) out.push_back('/');
        out.append(name(nodes_[n]));
    };
    for (auto it = deep.rbegin(); it != deep.rend(); ++it) emit(*it);
    while (depth > 0) emit(chain[--depth]);
}

const Node* Index::find(std::string_view relative) const {
    const Node* cur = &nodes_[root_id];
    while (!relative.empty()) {
        size_t slash = relative.find('/');
        std::string_view part = relative.substr(0, slash);
        relative =
            slash == std::string_view::npos ? std::string_view{} : relative.substr(slash + 1);
        if (part.empty() || part == ".") continue;
        if (!S_ISDIR(cur->mode)) return nullptr;
        cur = lookup(*cur, part);
        if (!cur) return nullptr;
    }
    return cur;
}

size_t Index::memory_bytes() const {
    return nodes_.capacity() * sizeof(Node) + arena_.capacity() +
           attrs_.capacity() * sizeof(Attrs) +
           odd_blocks_.size() * (sizeof(NodeId) + sizeof(uint64_t) + 2 * sizeof(void*));
}

uint64_t Index::blocks(const Node& n) const {
    uint64_t unit = attrs_[n.attrs].block_unit;
    if (unit == 0) {
        auto it = odd_blocks_.find(id_of(n));
        return it == odd_blocks_.end() ? 0 : it->second;
    }
    return (n.size + unit - 1) / unit * (unit / 512);
}

} // namespace clairfs::index
