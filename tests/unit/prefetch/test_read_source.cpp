// SPDX-License-Identifier: MIT
// Where a file's READs come from (Engine::source), the one rule the FUSE
// OPEN and READ both carry out: whole from the tiers up to max_file, by
// chunk above it while the chunks have a budget, and above that read
// through, or passed through to the kernel when larger than one READ.
#include "clairfs/prefetch/engine.hpp"
#include "disk_tree.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>

using namespace clairfs;
using prefetch::ReadSource;

namespace {

struct SourceMount {
    test::DiskTree tree;
    index::Index idx;
    int fd = -1;
    std::unique_ptr<prefetch::Engine> engine;

    explicit SourceMount(uint32_t chunk_size) {
        tree.write("small", 1000);
        tree.write("middle", 200'000);
        tree.write("large", 2 << 20);
        idx = tree.scan();
        fd = ::open(tree.root.c_str(), O_RDONLY | O_DIRECTORY);
        REQUIRE(fd >= 0);
        prefetch::EngineOptions o;
        o.mem = 8 << 20;
        o.max_file = 100'000;
        o.chunk_size = chunk_size;
        o.passthrough_above = 1 << 20;
        engine = std::make_unique<prefetch::Engine>(idx, fd, o); // not started: nothing runs
    }
    ~SourceMount() {
        engine.reset();
        ::close(fd);
    }
    ReadSource of(const std::string& name) const {
        for (index::NodeId id = 0; id < idx.size(); ++id)
            if (idx.name(idx.node(id)) == name) return engine->source(idx.node(id));
        FAIL("no file " << name);
        return ReadSource::tiers;
    }
};

} // namespace

TEST_CASE("files up to max_file are the tiers', larger ones the chunks' while chunks have a budget") {
    SourceMount m(64 << 10);
    CHECK(m.of("small") == ReadSource::tiers);
    CHECK(m.of("middle") == ReadSource::chunks);
    CHECK(m.of("large") == ReadSource::chunks); // held by chunk, never passed through
}

TEST_CASE("without chunks, larger files are read through, and passed through above one READ") {
    SourceMount m(0);
    CHECK(m.of("small") == ReadSource::tiers);
    CHECK(m.of("middle") == ReadSource::backing);
    CHECK(m.of("large") == ReadSource::passthrough);
}
