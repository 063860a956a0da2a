// SPDX-License-Identifier: MIT
#include "clairfs/peer/fingerprint.hpp"

#include <string>
#include <sys/stat.h>
#include <xxhash.h>

namespace clairfs::peer {

uint64_t index_fingerprint(const index::Index& idx) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    std::string path;
    for (index::NodeId id = 0; id < idx.size(); ++id) {
        const index::Node& n = idx.node(id);
        if (!S_ISREG(n.mode)) continue;
        idx.relative_path(id, path);
        uint64_t fields[4] = {id, n.size, static_cast<uint64_t>(n.mtime_sec),
                              static_cast<uint64_t>(n.mtime_nsec)};
        XXH3_64bits_update(st, fields, sizeof fields);
        XXH3_64bits_update(st, path.data(), path.size() + 0);
        XXH3_64bits_update(st, "\0", 1);
    }
    uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

} // namespace clairfs::peer
