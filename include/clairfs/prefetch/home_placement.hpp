// SPDX-License-Identifier: MIT
// How a peer group's files were given their homes (Engine::Homes), as
// status shows it under peers.homes.
#pragma once

#include <cstdint>

namespace clairfs::prefetch {

enum class HomePlacement : uint8_t {
    hash,     // a hash of each file, when the peers are attached
    schedule, // the first epoch of a job every node registered alike (Engine::plan_homes)
};

constexpr const char* home_placement_name(HomePlacement p) {
    switch (p) {
    case HomePlacement::hash:
        return "hash";
    case HomePlacement::schedule:
        return "schedule";
    }
    return "hash";
}

} // namespace clairfs::prefetch
