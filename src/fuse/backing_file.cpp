// SPDX-License-Identifier: MIT
#include "backing_file.hpp"

namespace clairfs::fuse {

int file_bytes(Filesystem& fs, OpenFile* of, index::NodeId id, cache::BlobRef& out) {
    if (of) {
        std::lock_guard lk(of->mu);
        if (of->blob) {
            out = of->blob;
            return 0;
        }
    }
    if (int rv = fs.engine->bytes_of(id, out); rv < 0) return rv;
    if (of) {
        std::lock_guard lk(of->mu);
        of->blob = out;
    }
    return 0;
}

} // namespace clairfs::fuse
