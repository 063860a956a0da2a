// SPDX-License-Identifier: MIT
#pragma once

#include "clairfs/fuse/filesystem.hpp"

#include <string>

namespace clairfs::fuse {

// Mounts `fs` at options.mountpoint, detaches into the background unless
// options.foreground, serves until unmounted or signalled (SIGINT, SIGTERM,
// SIGHUP), then unmounts. Returns "" on a clean end, else the reason; a
// failure before the mount exists leaves nothing mounted.
std::string serve(Filesystem& fs);

} // namespace clairfs::fuse
