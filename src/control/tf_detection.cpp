// SPDX-License-Identifier: MIT
#include "clairfs/control/tf_detection.hpp"

#include "clairfs/layout/dataset.hpp"
#include "clairfs/order/tf_detect.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace clairfs::control {
namespace {

// The list_files patterns the opened files suggest below `root`: as many
// `*` components as they lie deep, with their common extension first (a
// job writes "*/*.jpg" more often than "*/*"). Empty if they lie at
// different depths (no one pattern lists them all).
std::vector<std::string> glob_patterns(const index::Index& idx, const std::string& root,
                                       const std::set<index::NodeId>& nodes) {
    std::optional<size_t> depth;
    std::optional<std::string> ext;
    bool one_ext = true;
    std::string path;
    for (index::NodeId id : nodes) {
        path.clear();
        idx.relative_path(id, path);
        if (!root.empty()) {
            if (!path.starts_with(root + "/")) return {};
            path.erase(0, root.size() + 1);
        }
        size_t d = static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
        if (depth && *depth != d) return {};
        depth = d;
        size_t base = path.rfind('/') + 1, dot = path.rfind('.');
        std::string e = dot == std::string::npos || dot < base ? "" : path.substr(dot);
        if (ext && *ext != e) one_ext = false;
        ext = e;
    }
    if (!depth) return {};
    std::string stars;
    for (size_t i = 0; i < *depth; ++i) stars += "*/";
    std::vector<std::string> out;
    if (one_ext && ext && !ext->empty()) out.push_back(stars + "*" + *ext);
    out.push_back(stars + "*");
    return out;
}

// The first opens as samples of `ds`, in the order opened (files outside
// it left out); `nodes`: the same files as a set.
std::vector<order::Sample> samples_of(const index::Index& idx, const layout::Dataset& ds,
                                      std::span<const index::NodeId> first,
                                      const std::set<index::NodeId>& nodes) {
    std::unordered_map<index::NodeId, order::Sample> sample;
    for (size_t i = 0; i < ds.samples.size(); ++i) {
        index::NodeId node = layout::opened_node(idx, ds.samples[i]);
        if (nodes.count(node)) sample.emplace(node, static_cast<order::Sample>(i));
    }
    std::vector<order::Sample> out;
    for (index::NodeId id : first)
        if (auto it = sample.find(id); it != sample.end()) out.push_back(it->second);
    return out;
}

// Every process that opened a file of `ds`: tf.data's threads, those
// whose opens were the evidence and those already in a later iterator.
std::vector<uint32_t> claimed(const index::Index& idx, const layout::Dataset& ds,
                              const OpenedNodes& opened) {
    std::unordered_set<index::NodeId> mine;
    for (const auto& sample : ds.samples) mine.insert(layout::opened_node(idx, sample));
    std::vector<uint32_t> out;
    for (const auto& [pid, ids] : opened)
        if (std::ranges::any_of(ids, [&](index::NodeId id) { return mine.count(id) > 0; }))
            out.push_back(pid);
    return out;
}

std::string describe(const order::TfDetectedJob& j, const std::string& root,
                     const std::string& pattern) {
    const order::JobSpec& s = j.spec;
    std::string seed = s.seed_none ? "None" : std::to_string(s.seed);
    if (s.global_seed) seed += " after set_random_seed(" + std::to_string(s.global_seed->value) + ")";
    std::string out;
    if (s.pipeline == order::TfPipeline::list_files) {
        out = "list_files('" + (root.empty() ? pattern : root + "/" + pattern) + "', seed=" + seed + ")";
    } else {
        out = "image_dataset_from_directory('" + root + "', seed=" + seed +
              ", batch_size=" + std::to_string(s.batch_size);
        if (s.validation_split)
            out += ", validation_split=" + std::to_string(*s.validation_split).substr(0, 4) +
                   ", subset=" + std::string(order::subset_name(s.subset));
        if (s.keras_version == order::KerasVersion::legacy) out += ", keras_version=2.15";
        out += ")";
    }
    if (j.last_iterator != j.iterator)
        return out + ", iterators " + std::to_string(j.iterator) + " to " +
               std::to_string(j.last_iterator);
    return out + ", iterator " + std::to_string(j.iterator);
}

// The registration of the pipeline found, listing `root` as `kind` (with
// `pattern`, for a glob), and the processes it claims.
TfDetection detection(const index::Index& idx, const order::TfDetectedJob& j,
                      const std::string& root, layout::LayoutKind kind, const std::string& pattern,
                      const layout::Dataset& ds, const OpenedNodes& opened) {
    Registration reg;
    reg.root = root;
    reg.layout = kind;
    reg.layout_given = true;
    reg.spec = j.spec;
    reg.spec.pattern = pattern;
    reg.spec.epochs = unlimited_epochs;
    TfDetection found;
    found.what = describe(j, root, pattern);
    found.pids = claimed(idx, ds, opened);
    found.opens = j.opens;
    found.job.loaders.push_back(std::move(reg));
    return found;
}

} // namespace

TfAttempt detect_tf_pipeline(const index::Index& idx, const std::vector<std::string>& roots,
                             const OpenedNodes& opened, std::span<const index::NodeId> first,
                             const order::DetectOptions& search) {
    TfAttempt out;
    const std::set<index::NodeId> nodes(first.begin(), first.end());
    order::TfDetectOptions opt;
    opt.seeds = search.seeds;
    opt.cancel = search.cancel;
    std::set<std::string> tried;
    for (const std::string& root : roots) {
        if (!tried.insert(root).second) continue;
        std::vector<std::pair<layout::LayoutKind, std::string>> listings{
            {layout::LayoutKind::keras_directory, ""}};
        for (std::string& p : glob_patterns(idx, root, nodes))
            listings.emplace_back(layout::LayoutKind::glob, std::move(p));
        for (const auto& [kind, pattern] : listings) {
            if (search.cancel && search.cancel->load()) return out;
            layout::Dataset ds;
            if (!layout::build_dataset(idx, root, kind, pattern, ds).empty() || ds.samples.size() < 2 ||
                ds.samples.size() >= order::not_a_sample)
                continue;
            auto seq = samples_of(idx, ds, first, nodes);
            const auto n = static_cast<uint32_t>(ds.samples.size());
            order::TfDetectStats stats;
            auto j = order::detect_tf_job(n,
                                          kind == layout::LayoutKind::glob ? order::TfListing::glob
                                                                           : order::TfListing::keras_directory,
                                          seq, opt, stats);
            out.candidates += stats.candidates;
            if (stats.opens_needed && (!out.opens_needed || stats.opens_needed < out.opens_needed))
                out.opens_needed = stats.opens_needed;
            if (!j) continue;
            out.found = detection(idx, *j, root, kind, pattern, ds, opened);
            return out;
        }
    }
    return out;
}

} // namespace clairfs::control
