// SPDX-License-Identifier: MIT
// What every layout shares: naming a layout, finding the dataset root,
// spelling a sample's path and following it to the file the job opens.
#include "clairfs/layout/dataset.hpp"

#include "clairfs/config/utf8_text.hpp"
#include "clairfs/index/resolve.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "layout_builders.hpp"

#include <algorithm>
#include <sys/stat.h>
#include <utility>

namespace clairfs::layout {
namespace {

std::string open_root(const index::Index& idx, std::string_view root, const index::Node*& out) {
    std::string shown = "dataset root '" + config::message_text(root.empty() ? "." : root) + "'";
    index::Resolved r = index::resolve_path(idx, idx.node(index::root_id), root);
    if (!r.node) return shown + ": " + std::string(index::describe(r.status));
    if (!S_ISDIR(r.node->mode)) return shown + " is not a directory";
    // torchvision's os.scandir(root) raises here, and so would any listing.
    if (r.node->scan_errno)
        return shown + " could not be read: " + sys::error_text(-int{r.node->scan_errno});
    out = r.node;
    return "";
}

std::string build(const index::Index& idx, const index::Node& root, LayoutKind kind,
                  std::string_view manifest, Dataset& out) {
    switch (kind) {
    case LayoutKind::keras_directory:
        return build_keras_directory(idx, root, out);
    case LayoutKind::glob:
        return build_glob(idx, root, manifest, out);
    case LayoutKind::imagefolder:
        return build_imagefolder(idx, root, out);
    case LayoutKind::sorted:
        return build_sorted(idx, root, out);
    case LayoutKind::list:
        return build_list(idx, root, manifest, out);
    case LayoutKind::ranges:
        return build_ranges(idx, root, manifest, out);
    }
    return "unknown layout";
}

} // namespace

bool parse_layout(std::string_view text, LayoutKind& out) {
    static constexpr std::pair<std::string_view, LayoutKind> names[] = {
        {"imagefolder", LayoutKind::imagefolder},
        {"sorted", LayoutKind::sorted},
        {"list", LayoutKind::list},
        {"keras_directory", LayoutKind::keras_directory},
        {"glob", LayoutKind::glob},
        {"ranges", LayoutKind::ranges},
    };
    for (const auto& [name, kind] : names) {
        if (text != name) continue;
        out = kind;
        return true;
    }
    return false;
}

std::string join_path(std::string_view dir, std::string_view name) {
    std::string out;
    out.reserve(dir.size() + 1 + name.size());
    out.append(dir);
    if (!dir.empty()) out.push_back('/');
    out.append(name);
    return out;
}

const index::Node* dir_behind(const index::Index& idx, const index::Node& entry) {
    if (S_ISDIR(entry.mode)) return &entry;
    if (!S_ISLNK(entry.mode)) return nullptr;
    index::Resolved r = index::resolve(idx, entry);
    return r.node && S_ISDIR(r.node->mode) ? r.node : nullptr;
}

std::span<const index::Node> listing(const index::Index& idx, const index::Node& dir) {
    if (dir.scan_errno) return {};
    return idx.children(dir);
}

std::string too_many_samples() {
    return "more than " + std::to_string(max_samples) + " samples (sample numbers are 32-bit)";
}

uint32_t Dataset::class_of(size_t i) const {
    auto after = std::upper_bound(class_begin.begin(), class_begin.end(), i);
    return static_cast<uint32_t>(after - class_begin.begin() - 1);
}

std::string Dataset::path(const index::Index& idx, size_t i) const {
    const Sample& s = samples[i];
    return join_path(dirs[s.dir], idx.name(idx.node(s.name)));
}

index::NodeId opened_node(const index::Index& idx, const Sample& s) {
    index::Resolved r = index::resolve(idx, idx.node(s.name));
    return r.node ? idx.id_of(*r.node) : no_node;
}

namespace {

// Growth leaves up to half the vector unused; at 14 million samples that is
// tens of megabytes held for the life of the mount.
void keep(Dataset& built, Dataset& out) {
    built.samples.shrink_to_fit();
    built.ranges.shrink_to_fit();
    out = std::move(built);
}

} // namespace

std::string build_dataset(const index::Index& idx, std::string_view root, LayoutKind kind,
                          std::string_view manifest, Dataset& out) {
    const index::Node* dir = nullptr;
    if (auto why = open_root(idx, root, dir); !why.empty()) return why;
    Dataset built;
    if (auto why = build(idx, *dir, kind, manifest, built); !why.empty()) return why;
    keep(built, out);
    return "";
}

std::string build_dataset_taking(const index::Index& idx, std::string_view root, LayoutKind kind,
                                 std::string&& manifest, Dataset& out) {
    std::string text = std::move(manifest);
    if (kind != LayoutKind::ranges) return build_dataset(idx, root, kind, text, out);
    const index::Node* dir = nullptr;
    if (auto why = open_root(idx, root, dir); !why.empty()) return why;
    Ranges parsed;
    if (auto why = parse_ranges_text(text, parsed); !why.empty()) return why;
    std::string().swap(text);
    Dataset built;
    if (auto why = build_ranges(idx, *dir, std::move(parsed), built); !why.empty()) return why;
    keep(built, out);
    return "";
}

} // namespace clairfs::layout
