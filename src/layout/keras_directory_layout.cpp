// SPDX-License-Identifier: MIT
// Keras 3.15.1 index_directory (image_dataset_from_directory, labels
// "inferred", follow_links=False), before its numpy shuffle:
//   classes = [d for d in sorted(os.listdir(dir)) if os.path.isdir(dir/d)
//              and not d.startswith(".")]
//   per class: for root, _, files in sorted(os.walk(dir/cls), key=root):
//                  for f in sorted(files): keep if f.lower().endswith(ALLOWLIST)
// os.walk without followlinks lists a link to a directory among the
// directories but does not descend into it, so its files are not samples;
// the class folder itself may be a link (isdir follows it). Unlike
// torchvision, a class without images is no error.
#include "image_extensions.hpp"
#include "layout_builders.hpp"

#include <algorithm>
#include <sys/stat.h>

namespace clairfs::layout {
namespace {

struct KerasWalkedDir {
    const index::Node* node;
    std::string path; // relative to the dataset root
};

// Every directory os.walk(top) yields, sorted by path. Only real
// directories are descended into.
void walk_keras_class(const index::Index& idx, const index::Node& top, std::string_view name,
                std::vector<KerasWalkedDir>& walked) {
    walked.clear();
    walked.push_back({&top, std::string(name)});
    for (size_t at = 0; at < walked.size(); ++at)
        for (const index::Node& child : listing(idx, *walked[at].node))
            if (S_ISDIR(child.mode))
                walked.push_back({&child, join_path(walked[at].path, idx.name(child))});
    std::sort(walked.begin(), walked.end(),
              [](const KerasWalkedDir& a, const KerasWalkedDir& b) { return a.path < b.path; });
}

// os.walk's filenames: every entry is_dir() rejects (files, links to files,
// links that dangle or loop).
void add_keras_files(const index::Index& idx, const index::Node& dir, uint32_t dir_index, Dataset& out) {
    for (const index::Node& child : listing(idx, dir))
        if (has_keras_image_extension(idx.name(child)) && !dir_behind(idx, child))
            out.samples.push_back({dir_index, idx.id_of(child)});
}

} // namespace

std::string build_keras_directory(const index::Index& idx, const index::Node& root, Dataset& out) {
    std::vector<KerasWalkedDir> walked;
    for (const index::Node& entry : idx.children(root)) {
        std::string_view name = idx.name(entry);
        const index::Node* top = dir_behind(idx, entry);
        if (!top || name.starts_with('.')) continue;
        out.classes.emplace_back(name);
        out.class_begin.push_back(static_cast<uint32_t>(out.samples.size()));
        walk_keras_class(idx, *top, name, walked);
        for (KerasWalkedDir& w : walked) {
            out.dirs.push_back(std::move(w.path));
            add_keras_files(idx, *w.node, static_cast<uint32_t>(out.dirs.size() - 1), out);
        }
        if (out.samples.size() > max_samples) return too_many_samples();
    }
    out.class_begin.push_back(static_cast<uint32_t>(out.samples.size()));
    if (out.samples.empty())
        return "no images (.bmp .gif .jpeg .jpg .png) in class directories (Keras raises "
               "ValueError)";
    return "";
}

} // namespace clairfs::layout
