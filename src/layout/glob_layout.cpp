// SPDX-License-Identifier: MIT
// tf.io.matching_files(root + "/" + pattern), what Dataset.list_files lists
// before it shuffles: the pattern is matched one path component at a time
// (fnmatch with FNM_PATHNAME: '*', '?' and '[...]' never cross '/', a
// leading '.' is matched like any other byte), descending into directories
// and links to directories, and the matches are sorted bytewise.
#include "layout_builders.hpp"

#include <algorithm>
#include <fnmatch.h>
#include <string>
#include <sys/stat.h>

namespace clairfs::layout {
namespace {

std::vector<std::string> components(std::string_view pattern) {
    std::vector<std::string> out;
    for (size_t at = 0;;) {
        size_t slash = pattern.find('/', at);
        out.emplace_back(pattern.substr(at, slash == pattern.npos ? pattern.npos : slash - at));
        if (slash == pattern.npos) return out;
        at = slash + 1;
    }
}

struct Match {
    std::string path; // relative to the dataset root
    uint32_t dir;     // index into Dataset::dirs
    index::NodeId name;
};

class Globber {
public:
    Globber(const index::Index& idx, std::string_view pattern, Dataset& out)
        : idx_(idx), parts_(components(pattern)), out_(out) {}

    void walk(const index::Node& dir, const std::string& path, size_t depth) {
        bool last = depth + 1 == parts_.size();
        uint32_t dir_index = UINT32_MAX;
        for (const index::Node& child : listing(idx_, dir)) {
            std::string name(idx_.name(child));
            if (fnmatch(parts_[depth].c_str(), name.c_str(), 0) != 0) continue;
            if (!last) {
                if (const index::Node* sub = dir_behind(idx_, child))
                    walk(*sub, join_path(path, name), depth + 1);
                continue;
            }
            if (dir_index == UINT32_MAX) {
                dir_index = static_cast<uint32_t>(out_.dirs.size());
                out_.dirs.push_back(path);
            }
            matches_.push_back({join_path(path, name), dir_index, idx_.id_of(child)});
        }
    }

    std::vector<Match>& matches() { return matches_; }

private:
    const index::Index& idx_;
    std::vector<std::string> parts_;
    Dataset& out_;
    std::vector<Match> matches_;
};

} // namespace

std::string build_glob(const index::Index& idx, const index::Node& root, std::string_view pattern,
                       Dataset& out) {
    if (pattern.empty()) return "pipeline list_files needs pattern (a glob relative to root)";
    Globber g(idx, pattern, out);
    g.walk(root, "", 0);
    auto& m = g.matches();
    std::sort(m.begin(), m.end(), [](const Match& a, const Match& b) { return a.path < b.path; });
    if (m.empty())
        return "pattern '" + std::string(pattern) + "' matches no files (list_files raises "
               "InvalidArgumentError)";
    if (m.size() > max_samples) return too_many_samples();
    out.samples.reserve(m.size());
    for (const Match& x : m) {
        if (dir_behind(idx, idx.node(x.name)))
            return "pattern '" + std::string(pattern) + "' matches the directory '" + x.path +
                   "' (the job's read of it fails)";
        out.samples.push_back({x.dir, x.name});
    }
    return "";
}

} // namespace clairfs::layout
