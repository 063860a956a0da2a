// SPDX-License-Identifier: MIT
// torchvision 0.14.1 DatasetFolder/ImageFolder numbering:
//   classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
//   for each class, for dirpath, _, fnames in sorted(os.walk(root/cls, followlinks=True)):
//       for fname in sorted(fnames): keep if fname.lower().endswith(IMG_EXTENSIONS)
// Index children are already byte-sorted, which is Python's str order for
// UTF-8 names; only the walked directories need sorting, by full path.
#include "clairfs/index/resolve.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "image_extensions.hpp"
#include "layout_builders.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::layout {
namespace {

// One directory os.walk() yields.
struct WalkedDir {
    const index::Node* node; // the directory listed, symlinks resolved
    size_t parent;           // the walked directory it was found in; itself for the top
    std::string path;        // dirpath as os.walk spells it, relative to the dataset root
};

// find_classes() calls is_dir() unguarded: a root entry whose stat() fails
// with anything but ENOENT makes torchvision raise, so the layout fails too.
std::string check_class_entry(const index::Index& idx, const index::Node& entry) {
    if (!S_ISLNK(entry.mode)) return "";
    using enum index::ResolveStatus;
    index::ResolveStatus s = index::resolve(idx, entry).status;
    if (s != loop && s != not_dir && s != unreadable) return "";
    return "'" + std::string(idx.name(entry)) + "': " + std::string(index::describe(s)) +
           " (torchvision's is_dir() raises OSError)";
}

// The walked directory on the way down to `at` that lists `dir`, if any:
// descending into it again would repeat forever.
const WalkedDir* on_chain(const std::vector<WalkedDir>& walked, size_t at, const index::Node* dir) {
    for (;; at = walked[at].parent) {
        if (walked[at].node == dir) return &walked[at];
        if (walked[at].parent == at) return nullptr;
    }
}

std::string descend(const index::Index& idx, std::vector<WalkedDir>& walked, size_t at) {
    for (const index::Node& child : listing(idx, *walked[at].node)) {
        const index::Node* dir = dir_behind(idx, child);
        if (!dir) continue;
        std::string path = join_path(walked[at].path, idx.name(child));
        // Python would walk the cycle until the kernel's ELOOP cut it short,
        // yielding the same files again at each depth (2^40 times with two
        // such links); a dataset that does that is a mistake, not a layout.
        if (const WalkedDir* seen = on_chain(walked, at, dir))
            return "symlink cycle: '" + path + "' leads back to '" + seen->path +
                   "' (os.walk(followlinks=True) would not end)";
        walked.push_back({dir, at, std::move(path)});
    }
    return "";
}

// Every directory sorted(os.walk(top, followlinks=True)) yields, in that
// order: by full path, which is not depth-first ("a/b c" < "a/b/d").
std::string walk_class(const index::Index& idx, const index::Node& top, std::string_view name,
                       std::vector<WalkedDir>& walked) {
    walked.clear();
    walked.push_back({&top, 0, std::string(name)});
    for (size_t at = 0; at < walked.size(); ++at)
        if (auto why = descend(idx, walked, at); !why.empty()) return why;
    std::sort(walked.begin(), walked.end(),
              [](const WalkedDir& a, const WalkedDir& b) { return a.path < b.path; });
    return "";
}

// os.walk's filenames are every entry is_dir() rejects: files, links to
// files, and links that dangle or loop.
void add_files(const index::Index& idx, const index::Node& dir, uint32_t dir_index, Dataset& out) {
    for (const index::Node& child : listing(idx, dir))
        if (has_image_extension(idx.name(child)) && !dir_behind(idx, child))
            out.samples.push_back({dir_index, idx.id_of(child)});
}

std::string add_class(const index::Index& idx, const index::Node& top,
                      std::vector<WalkedDir>& walked, Dataset& out) {
    const std::string& name = out.classes.back();
    // os.walk() swallows the listing error and finds nothing; say why.
    if (top.scan_errno)
        return "class '" + name + "' could not be read: " + sys::error_text(-int{top.scan_errno}) +
               " (torchvision finds no samples and raises FileNotFoundError)";
    if (auto why = walk_class(idx, top, name, walked); !why.empty()) return why;
    size_t before = out.samples.size();
    for (WalkedDir& w : walked) {
        out.dirs.push_back(std::move(w.path));
        add_files(idx, *w.node, static_cast<uint32_t>(out.dirs.size() - 1), out);
    }
    if (out.samples.size() == before)
        return "class '" + name + "' has no samples (torchvision raises FileNotFoundError)";
    if (out.samples.size() > max_samples) return too_many_samples();
    return "";
}

} // namespace

std::string build_imagefolder(const index::Index& idx, const index::Node& root, Dataset& out) {
    std::vector<WalkedDir> walked; // reused: one class at a time
    for (const index::Node& entry : idx.children(root)) {
        if (auto why = check_class_entry(idx, entry); !why.empty()) return why;
        const index::Node* top = dir_behind(idx, entry);
        if (!top) continue; // files directly under the root belong to no class
        out.classes.emplace_back(idx.name(entry));
        out.class_begin.push_back(static_cast<uint32_t>(out.samples.size()));
        if (auto why = add_class(idx, *top, walked, out); !why.empty()) return why;
    }
    if (out.classes.empty()) return "no class directories (torchvision raises FileNotFoundError)";
    out.class_begin.push_back(static_cast<uint32_t>(out.samples.size()));
    return "";
}

} // namespace clairfs::layout
