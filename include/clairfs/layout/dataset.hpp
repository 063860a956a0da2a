// SPDX-License-Identifier: MIT
// Sample index <-> file, exactly as the framework numbers a dataset's
// samples. Built from the mount's index, so it sees what the job sees
// through the mount (symlinks that leave the tree are not there).
#pragma once

#include "clairfs/index/index.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs::layout {

enum class LayoutKind {
    imagefolder, // torchvision 0.14 DatasetFolder / ImageFolder rules
    sorted,      // every regular file below the root, byte order of relative path
    list,        // a manifest: one relative path per line, in dataset order
    // Keras's index_directory (image_dataset_from_directory, labels inferred,
    // follow_links=False): class folders, each walked without following links.
    keras_directory,
    glob, // tf.io.matching_files(root/pattern), as Dataset.list_files lists
    // A ranges manifest (layout/ranges_manifest.hpp): sample i is a byte
    // range of a large file (an LMDB value, an HDF5 row, a packed record).
    ranges,
};

bool parse_layout(std::string_view text, LayoutKind& out);

inline constexpr index::NodeId no_node = UINT32_MAX;

// One sample: where the framework's path to it was walked from, and the
// directory entry it names there. Eight bytes, so 14 million samples fit in
// ~112 MB.
struct Sample {
    uint32_t dir;       // index into Dataset::dirs: the directory path as walked
    index::NodeId name; // the entry in that directory (may be a symlink)
};

// ranges only: where sample i lies. Sixteen bytes per sample.
struct ByteRange {
    uint64_t offset;
    uint32_t length;
    index::NodeId node; // the regular file holding it (symlinks resolved)
};

struct Dataset {
    std::vector<std::string>
        dirs;                    // walked directory paths, relative to the dataset root ("" = root)
    std::vector<Sample> samples; // in dataset order: sample i is samples[i]; at most 2^32 - 1
    std::vector<std::string> classes; // imagefolder only, in class-index order
    // imagefolder only: class c holds samples [class_begin[c], class_begin[c + 1]).
    // torchvision numbers each class's samples in one run, so class
    // boundaries cost one entry per class instead of four bytes per sample.
    std::vector<uint32_t> class_begin;
    // ranges only: sample i is ranges[i] (samples[i] names its file). A job
    // over ranges opens its files once and reads samples by offset: clairfs
    // follows it by its READs (prefetch/chunks/range_follow.hpp), not its opens.
    std::vector<ByteRange> ranges;

    // The class index of sample i (imagefolder only). O(log classes).
    uint32_t class_of(size_t i) const;

    // "dir/name", relative to the dataset root, as the framework spells it.
    std::string path(const index::Index& idx, size_t i) const;
};

// The node the job's open() of sample i reaches (symlinks resolved), or
// no_node for a link that dangles, loops or leads outside the mount.
index::NodeId opened_node(const index::Index& idx, const Sample& s);

// Builds the dataset rooted at `root` (a path relative to the index root,
// "" for the root itself; symlinks in it are followed). `manifest` is the
// manifest's text for LayoutKind::list and LayoutKind::ranges, the pattern for LayoutKind::glob,
// and ignored otherwise. Returns "" or a
// one-line reason (missing root, a class without samples, a manifest line
// naming nothing); `out` is only assigned on success.
std::string build_dataset(const index::Index& idx, std::string_view root, LayoutKind kind,
                          std::string_view manifest, Dataset& out);
// The same, given the manifest's text to keep: a ranges manifest's text
// (515 MB for 14.2M samples) is let go as soon as it is parsed, before the
// dataset is built, so the two are never held at once.
std::string build_dataset_taking(const index::Index& idx, std::string_view root, LayoutKind kind,
                                 std::string&& manifest, Dataset& out);

} // namespace clairfs::layout
