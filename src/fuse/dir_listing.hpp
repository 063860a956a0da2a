// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/fuse/filesystem.hpp"

namespace clairfs::fuse {

// Answers readdir (plus=false) or readdirplus (plus=true). Offsets are
// positions: 0 is ".", 1 is "..", 2 + k is the k-th child in byte order, so
// a listing resumed at any offset continues exactly where it stopped.
void reply_listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus);

} // namespace clairfs::fuse
