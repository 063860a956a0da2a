// SPDX-License-Identifier: MIT
#pragma once

#include "backing_file.hpp"

#include <memory>

namespace clairfs::fuse {

// The FUSE thread's read buffer, reused unless an abandoned call still
// writes into it; grown to the largest request seen (bounded by max_read).
std::shared_ptr<char[]> read_buffer(size_t size);

// Answers a READ of `size` bytes at `off` of a file the tiers do not take,
// from the backing store, within --io-timeout. `of` is null with
// --kernel-opens (no OPEN reached us): the call then opens for itself.
void read_through(fuse_req_t req, Filesystem& fs, const index::Node& n, OpenFile* of, size_t size,
                  off_t off);

} // namespace clairfs::fuse
