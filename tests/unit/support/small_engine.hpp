// SPDX-License-Identifier: MIT
// The engine the controller's tests and the engine's own drive, as a mount
// builds it but small: a 4 MiB RAM tier and two fetch threads, started.
// And a latch a test holds a build (or a release) on, opened however the
// test ends, so that a failed REQUIRE cannot leave a thread waiting on it
// for ever.
#pragma once

#include "clairfs/prefetch/engine.hpp"
#include "dataset.hpp"

#include <latch>
#include <memory>

namespace clairfs::test {

inline std::unique_ptr<prefetch::Engine> small_engine(const Dataset& d) {
    prefetch::EngineOptions opt;
    opt.mem = 4 << 20;
    opt.fetch_threads = 2;
    auto engine = std::make_unique<prefetch::Engine>(d.idx, d.root_fd, opt);
    engine->start();
    return engine;
}

struct OpenAtEnd {
    std::latch& l;
    ~OpenAtEnd() {
        if (!l.try_wait()) l.count_down();
    }
};

} // namespace clairfs::test
