// SPDX-License-Identifier: MIT
// Where a file's READs come from (Engine::source), the one rule the FUSE
// OPEN and READ both carry out: whole from the tiers up to max_file, by
// chunk above it while the chunks have a budget, and above that read
// through, or passed through to the kernel when larger than one READ.
#include "clairfs/prefetch/engine.hpp"
#include "dataset.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using prefetch::ReadSource;

namespace {

// Samples 0, 1 and 2: small (1000 bytes), middle (200,000) and large (2 MiB).
struct SourceMount {
    test::Dataset d{3};
    std::unique_ptr<prefetch::Engine> engine;

    explicit SourceMount(uint32_t chunk_size) {
        d.resize({1000, 200'000, 2 << 20});
        prefetch::EngineOptions o;
        o.mem = 8 << 20;
        o.max_file = 100'000;
        o.chunk_size = chunk_size;
        o.passthrough_above = 1 << 20;
        engine = std::make_unique<prefetch::Engine>(d.idx, d.root_fd, o); // not started
    }
    ReadSource of(size_t sample) const { return engine->source(d.node(sample)); }
};

} // namespace

TEST_CASE("files up to max_file are the tiers', larger ones the chunks' while chunks have a budget") {
    SourceMount m(64 << 10);
    CHECK(m.of(0) == ReadSource::tiers);
    CHECK(m.of(1) == ReadSource::chunks);
    CHECK(m.of(2) == ReadSource::chunks); // held by chunk, never passed through
}

TEST_CASE("without chunks, larger files are read through, and passed through above one READ") {
    SourceMount m(0);
    CHECK(m.of(0) == ReadSource::tiers);
    CHECK(m.of(1) == ReadSource::backing);
    CHECK(m.of(2) == ReadSource::passthrough);
}
