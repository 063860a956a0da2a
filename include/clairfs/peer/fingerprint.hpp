// SPDX-License-Identifier: MIT
// What two daemons must agree on before they trade files by id: the same
// ids naming the same files of the same sizes and times.
#pragma once

#include "clairfs/index/index.hpp"

#include <cstdint>

namespace clairfs::peer {

// XXH3 over every regular file's id, path relative to the root, size and
// mtime, in id order.
uint64_t index_fingerprint(const index::Index& idx);

} // namespace clairfs::peer
