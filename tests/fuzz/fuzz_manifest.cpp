// SPDX-License-Identifier: MIT
// A list layout's manifest against a small index: refused with a one-line
// reason, or a dataset whose every sample opens a regular file. The same
// bytes as a ranges manifest: refused with a one-line reason, or samples
// that each lie within a regular file and share no byte.
#include "clairfs/layout/dataset.hpp"
#include "fuzz_check.hpp"

#include <algorithm>
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
    for (std::string_view root : {"", "train"}) {
        layout::Dataset ds;
        std::string why = layout::build_dataset(idx, root, layout::LayoutKind::ranges, manifest, ds);
        fuzz::require_one_line(why);
        if (!why.empty()) continue;
        fuzz::require(!ds.ranges.empty() && ds.ranges.size() == ds.samples.size(),
                      "an accepted ranges manifest without a range per sample");
        std::vector<layout::ByteRange> sorted = ds.ranges;
        for (const auto& r : sorted) {
            fuzz::require(S_ISREG(idx.node(r.node).mode), "a range outside a regular file");
            fuzz::require(r.length > 0 && r.offset + r.length <= idx.node(r.node).size,
                          "a range past its file's end");
        }
        std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
            return a.node != b.node ? a.node < b.node : a.offset < b.offset;
        });
        for (size_t k = 1; k < sorted.size(); ++k)
            fuzz::require(sorted[k - 1].node != sorted[k].node ||
                              sorted[k - 1].offset + sorted[k - 1].length <= sorted[k].offset,
                          "two accepted samples overlap");
    }
    return 0;
}
