// SPDX-License-Identifier: MIT
// A manifest: one path per line, relative to the dataset root, in dataset
// order. Each must reach a regular file the way the job's open() would,
// symlinks followed; the sample keeps the line's own spelling.
#include "clairfs/config/utf8_text.hpp"
#include "clairfs/index/resolve.hpp"
#include "layout_builders.hpp"

#include <sys/stat.h>
#include <unordered_map>

namespace clairfs::layout {
namespace {

class ManifestReader {
public:
    ManifestReader(const index::Index& idx, const index::Node& root, Dataset& out)
        : idx_(idx), root_(root), out_(out) {}

    // "" or why the line names no regular file.
    std::string add(std::string_view line) {
        if (line.starts_with('/')) return "absolute path; lines are relative to the dataset root";
        size_t slash = line.rfind('/');
        std::string_view dir = slash == std::string_view::npos ? "" : line.substr(0, slash);
        std::string_view name = line.substr(slash == std::string_view::npos ? 0 : slash + 1);
        // "a/", "a/." and "a/.." name no entry a sample could hold.
        if (name.empty() || name == "." || name == "..") return not_a_file(line);
        uint32_t dir_index = 0;
        if (auto why = find_dir(dir, dir_index); !why.empty()) return why;
        return add_entry(dir_index, name);
    }

private:
    const index::Index& idx_;
    const index::Node& root_;
    Dataset& out_;
    // Keys view the manifest text, which outlives the reader.
    std::unordered_map<std::string_view, uint32_t> dir_ids_;
    std::vector<const index::Node*> dir_nodes_; // per Dataset::dirs entry, resolved
    std::string_view last_dir_;                 // manifests list a directory's files together
    uint32_t last_index_ = UINT32_MAX;

    // Each directory is resolved once, however many lines name it.
    std::string find_dir(std::string_view dir, uint32_t& out) {
        if (last_index_ != UINT32_MAX && dir == last_dir_) {
            out = last_index_;
            return "";
        }
        if (auto it = dir_ids_.find(dir); it != dir_ids_.end()) {
            out = it->second;
        } else if (auto why = add_dir(dir, out); !why.empty()) {
            return why;
        }
        last_dir_ = dir;
        last_index_ = out;
        return "";
    }

    std::string add_dir(std::string_view dir, uint32_t& out) {
        index::Resolved r = index::resolve_path(idx_, root_, dir);
        if (!r.node) return std::string(index::describe(r.status));
        if (!S_ISDIR(r.node->mode))
            return std::string(index::describe(index::ResolveStatus::not_dir));
        out = static_cast<uint32_t>(out_.dirs.size());
        out_.dirs.emplace_back(dir);
        dir_nodes_.push_back(r.node);
        dir_ids_.emplace(dir, out);
        return "";
    }

    // The sample keeps the directory entry; open() must reach a regular file from it.
    std::string add_entry(uint32_t dir_index, std::string_view name) {
        const index::Node* entry = idx_.lookup(*dir_nodes_[dir_index], name);
        if (!entry) return std::string(index::describe(index::ResolveStatus::missing));
        index::Resolved r = index::resolve(idx_, *entry);
        if (!r.node) return std::string(index::describe(r.status));
        if (!S_ISREG(r.node->mode)) return "not a regular file";
        out_.samples.push_back({dir_index, idx_.id_of(*entry)});
        return "";
    }

    std::string not_a_file(std::string_view line) const {
        index::Resolved r = index::resolve_path(idx_, root_, line);
        return r.node ? "not a regular file" : std::string(index::describe(r.status));
    }
};

std::string line_error(size_t number, std::string_view line, const std::string& why) {
    return "manifest line " + std::to_string(number) + " '" + config::message_text(line) +
           "': " + why;
}

} // namespace

// Lines end in '\n', optionally "\r\n"; the text after the last '\n' is a
// line too unless it is empty, so a final newline is optional. Any other
// empty line is an error: a blank in the middle is a mistake, not a sample.
std::string build_list(const index::Index& idx, const index::Node& root, std::string_view manifest,
                       Dataset& out) {
    ManifestReader reader(idx, root, out);
    for (size_t number = 1; !manifest.empty(); ++number) {
        size_t newline = manifest.find('\n');
        std::string_view line = manifest.substr(0, newline);
        manifest.remove_prefix(newline == std::string_view::npos ? manifest.size() : newline + 1);
        if (line.ends_with('\r')) line.remove_suffix(1);
        if (line.empty()) return "manifest line " + std::to_string(number) + " is empty";
        if (auto why = reader.add(line); !why.empty()) return line_error(number, line, why);
        if (out.samples.size() > max_samples) return too_many_samples();
    }
    if (out.samples.empty()) return "the manifest lists no files";
    return "";
}

} // namespace clairfs::layout
