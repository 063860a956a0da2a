// SPDX-License-Identifier: MIT
// A list layout's manifest against a small index: refused with a one-line
// reason, or a dataset whose every sample opens a regular file.
#include "clairfs/layout/dataset.hpp"
#include "fuzz_check.hpp"

#include <sys/stat.h>

using namespace clairfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view manifest = fuzz::as_text(data, size);
    const index::Index& idx = fuzz::small_index();
    for (std::string_view root : {"", "train"}) {
        layout::Dataset ds;
        std::string why = layout::build_dataset(idx, root, layout::LayoutKind::list, manifest, ds);
        fuzz::require_one_line(why);
        if (!why.empty()) continue;
        fuzz::require(!ds.samples.empty(), "an accepted manifest without samples");
        fuzz::require(ds.samples.size() <= size, "more samples than the manifest has bytes");
        for (const auto& s : ds.samples) {
            fuzz::require(s.dir < ds.dirs.size(), "a sample's directory is out of range");
            index::NodeId id = layout::opened_node(idx, s);
            fuzz::require(id != layout::no_node && S_ISREG(idx.node(id).mode),
                          "a sample that does not open a regular file");
        }
    }
    return 0;
}
