// SPDX-License-Identifier: MIT
#include "order_dataset.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/index/load_index.hpp"
#include "clairfs/layout/framework_layout.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "mount_checks.hpp"

namespace clairfs::cli {

struct OrderDatasetLoader {
    static LoadFailure scan(const std::string& root, index::Index& out) {
        Backing b;
        if (auto why = open_backing(root, b); !why.empty()) return {why, false};
        index::ScanReport report;
        auto why = index::load_index(b.fd, b.real, {16, index::Progress::auto_}, out, report);
        sys::close(b.fd);
        if (!why.empty()) return {"cannot index '" + root + "': " + why, false};
        return {};
    }

    static LoadFailure load(const OrderArgs& a, OrderDataset& out) {
        if (a.n) {
            out.n_ = *a.n;
            return {};
        }
        std::optional<layout::LayoutKind> given;
        if (a.layout) {
            layout::LayoutKind k;
            if (!layout::parse_layout(*a.layout, k))
                return {"invalid value for layout: " + *a.layout +
                            " (expected imagefolder, sorted, list, ranges, keras_directory or glob)",
                        true};
            given = k;
        }
        layout::LayoutKind kind;
        if (auto why = layout::layout_for_job(a.spec, given, kind); !why.empty())
            return {why, true};
        std::string manifest;
        if (layout::reads_manifest(kind)) {
            if (a.manifest.empty())
                return {std::string("layout ") + layout::layout_name(kind) +
                            " needs --manifest FILE",
                        true};
            if (!config::read_text_file(a.manifest, manifest))
                return {"cannot read manifest '" + a.manifest + "'", false};
        }
        out.index_ = std::make_unique<index::Index>();
        if (auto f = scan(a.root, *out.index_); !f.message.empty()) return f;
        if (kind == layout::LayoutKind::glob) manifest = a.spec.pattern;
        if (auto why = layout::build_dataset(*out.index_, "", kind, manifest, out.dataset_);
            !why.empty())
            return {a.root + ": " + why, false};
        return {};
    }
};

// A sample that is a byte range names its file and where in it:
// "train.lmdb/data.mdb@8208+40960".
std::string OrderDataset::path(order::Sample s) const {
    if (!index_) return std::to_string(s);
    std::string p = dataset_.path(*index_, s);
    if (!dataset_.ranges.empty()) {
        const layout::ByteRange& r = dataset_.ranges[s];
        p += "@" + std::to_string(r.offset) + "+" + std::to_string(r.length);
    }
    return p;
}

bool OrderDataset::file_size(order::Sample s, uint64_t& out) const {
    if (!index_ || s >= dataset_.samples.size()) return false;
    index::NodeId id = layout::opened_node(*index_, dataset_.samples[s]);
    if (id == layout::no_node) return false;
    out = index_->node(id).size;
    return true;
}

LoadFailure load_order_dataset(const OrderArgs& args, OrderDataset& out) {
    return OrderDatasetLoader::load(args, out);
}

} // namespace clairfs::cli
