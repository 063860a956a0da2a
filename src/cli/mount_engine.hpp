// SPDX-License-Identifier: MIT
// The engine `clairfs mount` serves from: its options from the mount's,
// the heap it draws buffers from, and the SSD and peer tiers attached to it.
#pragma once

#include "clairfs/config/mount_options.hpp"
#include "clairfs/index/index.hpp"
#include "clairfs/prefetch/engine.hpp"
#include "peer_launch.hpp"

#include <string>

namespace clairfs::cli {

// The engine's options: the mount's, with the combinations that rule each
// other out settled.
prefetch::EngineOptions engine_options(const config::MountOptions& o);

// malloc's thresholds and the RAM tier's buffer arena, before the engine
// allocates its first buffer.
void set_up_heap(const prefetch::EngineOptions& eo);

// The SSD tiers in --cache-dir (none without one, or with --ssd 0) and,
// with --peers, the peer group `launch` joined.
void attach_tiers(const config::MountOptions& o, const std::string& backing_real,
                  const index::Index& idx, PeerLaunch& launch, prefetch::Engine& engine);

} // namespace clairfs::cli
