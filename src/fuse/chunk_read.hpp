// SPDX-License-Identifier: MIT
#pragma once

#include "backing_file.hpp"

namespace clairfs::fuse {

// Answers a READ of `size` bytes (> 0, within the file) at `off` of a file
// the tiers hold by chunk (prefetch/chunk_store.hpp): from RAM, else after
// the chunks' fetch, which --io-timeout bounds (EIO past it).
void chunk_read(fuse_req_t req, Filesystem& fs, index::NodeId id, size_t size,
                uint64_t off);

} // namespace clairfs::fuse
