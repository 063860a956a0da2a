// SPDX-License-Identifier: MIT
// Every regular file below the root, in byte order of its relative path;
// symlinks are neither listed nor followed. Walked depth-first with siblings
// ordered as if each directory's name ended in '/': that keeps everything
// below a directory together, where its full paths sort ("a/b c" before
// "a/b/d", though "b" < "b c").
#include "clairfs/sys/syscalls.hpp"
#include "layout_builders.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::layout {
namespace {

struct Pending {
    index::NodeId node;
    uint32_t dir; // index into Dataset::dirs of the directory holding it
};

// Byte i of a name followed by the '/' every path below a directory has;
// -1 past the end, so a name sorts before its own extensions.
int key_byte(std::string_view name, bool dir, size_t i) {
    if (i < name.size()) return static_cast<unsigned char>(name[i]);
    return dir && i == name.size() ? '/' : -1;
}

bool path_order(const index::Index& idx, const index::Node* a, const index::Node* b) {
    std::string_view x = idx.name(*a), y = idx.name(*b);
    size_t common = std::min(x.size(), y.size());
    if (int c = x.substr(0, common).compare(y.substr(0, common)); c != 0) return c < 0;
    return key_byte(x, S_ISDIR(a->mode), common) < key_byte(y, S_ISDIR(b->mode), common);
}

// Pushes the children of `dir` so that they pop in full-path order.
void push_children(const index::Index& idx, const index::Node& dir, uint32_t dir_index,
                   std::vector<Pending>& stack, std::vector<const index::Node*>& scratch) {
    auto kids = idx.children(dir);
    scratch.clear();
    for (const index::Node& k : kids) scratch.push_back(&k);
    // Name order is already path order unless a subdirectory is present.
    if (std::any_of(kids.begin(), kids.end(), [](auto& k) { return S_ISDIR(k.mode); }))
        std::sort(scratch.begin(), scratch.end(),
                  [&idx](auto* a, auto* b) { return path_order(idx, a, b); });
    for (auto it = scratch.rbegin(); it != scratch.rend(); ++it)
        stack.push_back({idx.id_of(**it), dir_index});
}

// A directory the scan could not read: silently leaving its files out
// would renumber every sample after it.
std::string unreadable(const Dataset& out, const Pending& p, const index::Index& idx) {
    std::string path = join_path(out.dirs[p.dir], idx.name(idx.node(p.node)));
    return "directory '" + path +
           "' could not be read: " + sys::error_text(-int{idx.node(p.node).scan_errno});
}

} // namespace

std::string build_sorted(const index::Index& idx, const index::Node& root, Dataset& out) {
    std::vector<Pending> stack;
    std::vector<const index::Node*> scratch;
    out.dirs.emplace_back();
    push_children(idx, root, 0, stack, scratch);
    while (!stack.empty()) {
        Pending p = stack.back();
        stack.pop_back();
        const index::Node& n = idx.node(p.node);
        if (S_ISREG(n.mode)) out.samples.push_back({p.dir, p.node});
        if (!S_ISDIR(n.mode)) continue; // symlinks are neither listed nor followed
        if (n.scan_errno) return unreadable(out, p, idx);
        out.dirs.push_back(join_path(out.dirs[p.dir], idx.name(n)));
        push_children(idx, n, static_cast<uint32_t>(out.dirs.size() - 1), stack, scratch);
    }
    if (out.samples.empty()) return "no regular files below the dataset root";
    if (out.samples.size() > max_samples) return too_many_samples();
    return "";
}

} // namespace clairfs::layout
