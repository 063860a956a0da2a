// SPDX-License-Identifier: MIT
// A ranges manifest (layout/ranges_manifest.hpp) checked against the
// mount's index: every file must be a regular file below the dataset root,
// every range must lie within it, and no two samples may share a byte (a
// READ's offset must name one sample). A manifest written for another copy
// of the data (a file since rewritten) is caught here, not by wrong bytes.
#include "clairfs/config/utf8_text.hpp"
#include "clairfs/index/resolve.hpp"
#include "clairfs/layout/ranges_manifest.hpp"
#include "layout_builders.hpp"

#include <algorithm>
#include <numeric>
#include <sys/stat.h>

namespace clairfs::layout {
namespace {

struct FileOf {
    index::NodeId name = no_node; // the directory entry the manifest names
    index::NodeId node = no_node; // the regular file it reaches
};

// Resolves a manifest's PATH as the job's open() would; "" or why it fails.
std::string resolve_file(const index::Index& idx, const index::Node& root, const std::string& path,
                         FileOf& out) {
    std::string shown = "manifest file '" + config::message_text(path) + "'";
    size_t slash = path.rfind('/');
    std::string_view dir = slash == std::string::npos ? "" : std::string_view(path).substr(0, slash);
    std::string_view name =
        std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
    index::Resolved d = index::resolve_path(idx, root, dir);
    if (!d.node) return shown + ": " + std::string(index::describe(d.status));
    if (!S_ISDIR(d.node->mode))
        return shown + ": " + std::string(index::describe(index::ResolveStatus::not_dir));
    const index::Node* entry = idx.lookup(*d.node, name);
    if (!entry) return shown + ": " + std::string(index::describe(index::ResolveStatus::missing));
    index::Resolved r = index::resolve(idx, *entry);
    if (!r.node) return shown + ": " + std::string(index::describe(r.status));
    if (!S_ISREG(r.node->mode)) return shown + " is not a regular file";
    out = {idx.id_of(*entry), idx.id_of(*r.node)};
    return "";
}

std::string span_text(const ByteRange& r) {
    return "[" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.length) + ")";
}

} // namespace

std::string parse_ranges_text(std::string_view manifest, Ranges& parsed) {
    if (auto why = parse_ranges(manifest, parsed); !why.empty())
        return why.starts_with("line ") ? "manifest " + why : why;
    return "";
}

std::string build_ranges(const index::Index& idx, const index::Node& root,
                         std::string_view manifest, Dataset& out) {
    Ranges parsed;
    if (auto why = parse_ranges_text(manifest, parsed); !why.empty()) return why;
    return build_ranges(idx, root, std::move(parsed), out);
}

namespace {

// Each file of the manifest resolved in the index; out.dirs gets its
// directory.
std::string resolve_files(const index::Index& idx, const index::Node& root, const Ranges& parsed,
                          std::vector<FileOf>& files, Dataset& out) {
    files.resize(parsed.files.size());
    for (size_t f = 0; f < parsed.files.size(); ++f) {
        if (auto why = resolve_file(idx, root, parsed.files[f], files[f]); !why.empty())
            return why;
        const std::string& path = parsed.files[f];
        size_t slash = path.rfind('/');
        out.dirs.push_back(slash == std::string::npos ? "" : path.substr(0, slash));
    }
    return "";
}

// Each sample's range, within its file as scanned.
std::string place_samples(const index::Index& idx, const Ranges& parsed,
                          const std::vector<FileOf>& files, Dataset& out) {
    const size_t n = parsed.entries.size();
    out.samples.reserve(n);
    out.ranges.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const Ranges::Entry& e = parsed.entries[i];
        ByteRange r{e.offset, e.length, files[e.file].node};
        uint64_t size = idx.node(r.node).size;
        if (e.offset + e.length > size)
            return "manifest sample " + std::to_string(i) + " " + span_text(r) +
                   " ends past the end of '" + config::message_text(parsed.files[e.file]) +
                   "' (" + std::to_string(size) +
                   " bytes): was the manifest written for other data?";
        out.samples.push_back({e.file, files[e.file].name});
        out.ranges.push_back(r);
    }
    return "";
}

// Sorted by (file, offset), each range must end where or before the next
// begins.
std::string check_overlaps(const Ranges& parsed, const Dataset& out) {
    const size_t n = out.ranges.size();
    std::vector<uint32_t> by_place(n);
    std::iota(by_place.begin(), by_place.end(), 0U);
    std::sort(by_place.begin(), by_place.end(), [&](uint32_t a, uint32_t b) {
        const ByteRange &x = out.ranges[a], &y = out.ranges[b];
        return x.node != y.node ? x.node < y.node : x.offset < y.offset;
    });
    for (size_t k = 1; k < n; ++k) {
        uint32_t i = by_place[k - 1], j = by_place[k];
        const ByteRange &a = out.ranges[i], &b = out.ranges[j];
        if (a.node == b.node && a.offset + a.length > b.offset)
            return "manifest samples " + std::to_string(std::min(i, j)) + " and " +
                   std::to_string(std::max(i, j)) + " overlap in '" +
                   config::message_text(parsed.files[out.samples[j].dir]) + "' (" +
                   span_text(a) + " and " + span_text(b) +
                   "): a READ's offset must name one sample";
    }
    return "";
}

} // namespace

// Dataset::dirs gets one entry per file (its directory), so samples[i]
// spells its file as the manifest does: clairfs order --paths prints it.
std::string build_ranges(const index::Index& idx, const index::Node& root, Ranges&& parsed,
                         Dataset& out) {
    std::vector<FileOf> files;
    if (auto why = resolve_files(idx, root, parsed, files, out); !why.empty()) return why;
    if (auto why = place_samples(idx, parsed, files, out); !why.empty()) return why;
    // Sixteen bytes a sample, now in out.ranges: not held through the sort.
    std::vector<Ranges::Entry>().swap(parsed.entries);
    return check_overlaps(parsed, out);
}

} // namespace clairfs::layout
