// SPDX-License-Identifier: MIT
#include "clairfs/cache/ssd_tier.hpp"

#include <sys/stat.h>

namespace clairfs::cache {

DescribeFile describe_index(const index::Index& idx) {
    return [&idx](index::NodeId id, FileIdentity& out) {
        if (!idx.contains(id)) return false;
        const index::Node& n = idx.node(id);
        if (!S_ISREG(n.mode)) return false;
        idx.relative_path(id, out.path);
        out.size = n.size;
        out.mtime_ns = n.mtime_sec * 1'000'000'000 + n.mtime_nsec;
        return true;
    };
}

} // namespace clairfs::cache
