// SPDX-License-Identifier: MIT
#include "status_prometheus.hpp"
#include "status_summary.hpp"

#include <cstdio>
#include <string_view>

namespace clairfs::cli {
namespace {

using nlohmann::json;

// A label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

class Writer {
public:
    explicit Writer(std::string mount) : labels_("mount=\"" + label_value(mount) + "\"") {}

    // One family with one series, if the status has a number (or a boolean,
    // as 0 or 1) at `path`.
    void one(const char* name, const char* type, const char* help, const json& st,
             const char* path) {
        const json& v = status_at(st, path);
        double x = 0;
        if (v.is_number())
            x = v.get<double>();
        else if (v.is_boolean())
            x = v.get<bool>() ? 1 : 0;
        else
            return;
        family(name, type, help);
        series(name, "", x);
    }
    void family(const char* name, const char* type, const char* help) {
        out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    }
    // `extra` is more labels, already formatted (key="value",...), or "".
    void series(const char* name, const std::string& extra, double x) {
        char num[64];
        snprintf(num, sizeof num, "%.17g", x);
        out_ += std::string(name) + "{" + labels_ + (extra.empty() ? "" : "," + extra) + "} " +
                num + "\n";
    }
    std::string take() { return std::move(out_); }

private:
    std::string labels_, out_;
};

// One series each, straight from a number (or boolean) of the status.
struct Metric {
    const char* name;
    const char* type;
    const char* help;
    const char* path; // in the status document
    bool ssd_only = false; // only while the SSD tier is enabled
};

const Metric metrics[] = {
    {"clairfs_match_rate", "gauge",
     "Share of the registered job's opens that followed the predicted order.", "match_rate"},
    {"clairfs_epoch", "gauge", "The registered job's current epoch.", "epoch"},
    {"clairfs_ram_bytes", "gauge", "Bytes the RAM tier holds.", "ram/bytes"},
    {"clairfs_ram_capacity_bytes", "gauge", "The RAM tier's budget (--mem).", "ram/capacity"},
    {"clairfs_ram_files", "gauge", "Files the RAM tier holds.", "ram/files"},
    {"clairfs_ram_hits_total", "counter", "Reads answered from the RAM tier.", "ram/hits"},
    {"clairfs_ram_misses_total", "counter", "Reads the RAM tier could not answer.", "ram/misses"},
    {"clairfs_ram_evictions_total", "counter", "Files evicted from the RAM tier.",
     "ram/evictions"},
    {"clairfs_ssd_bytes", "gauge", "Bytes the SSD tier holds.", "ssd/bytes", true},
    {"clairfs_ssd_capacity_bytes", "gauge", "The SSD tier's budget (--ssd).", "ssd/capacity",
     true},
    {"clairfs_ssd_hits_total", "counter", "Reads answered from the SSD tier.", "ssd/hits", true},
    {"clairfs_ssd_errors_total", "counter", "SSD tier read and write errors.", "ssd/errors", true},
    {"clairfs_chunk_files", "gauge", "Files held by chunk (larger than the RAM tier takes whole).",
     "chunks/files"},
    {"clairfs_chunk_ram_bytes", "gauge", "Bytes of chunks the RAM tier holds.", "chunks/ram/bytes"},
    {"clairfs_chunk_ram_capacity_bytes", "gauge", "The chunks' share of --mem.",
     "chunks/ram/capacity"},
    {"clairfs_chunk_ssd_bytes", "gauge", "Bytes of chunks the SSD tier holds.", "chunks/ssd/bytes"},
    {"clairfs_chunk_ssd_hits_total", "counter", "Chunks read from the SSD tier.",
     "chunks/ssd/hits"},
    {"clairfs_chunk_reads_total", "counter", "READs answered from chunks.", "chunks/reads"},
    {"clairfs_chunk_read_ahead_total", "counter", "Chunks queued ahead of sequential readers.",
     "chunks/read_ahead"},
    {"clairfs_chunk_predicted_total", "counter",
     "Chunks fetched ahead of the samples a ranges job reads next, or of the shards a "
     "registered job opens next.",
     "chunks/predicted"},
    {"clairfs_chunk_pushed_samples_total", "counter",
     "Samples of a ranges job pushed into the kernel's page cache ahead of their reads.",
     "chunks/pushed/samples"},
    {"clairfs_chunk_pushed_bytes_total", "counter", "Bytes of those samples.",
     "chunks/pushed/bytes"},
    {"clairfs_chunk_dropped_samples_total", "counter",
     "Samples of a ranges job dropped from the kernel's page cache once read.", "chunks/dropped"},
    {"clairfs_chunk_dropped_behind_total", "counter",
     "Chunks a sequential reader had passed, dropped from the kernel's page cache (drop-behind).",
     "chunks/dropped_behind"},
    {"clairfs_chunk_read_ahead_wasted_total", "counter",
     "Chunks read ahead and dropped before any READ wanted them.", "chunks/read_ahead_wasted"},
    {"clairfs_backing_reads_total", "counter", "Read calls made to the backing store.",
     "backing/reads"},
    {"clairfs_backing_read_bytes_total", "counter", "Bytes read from the backing store.",
     "backing/bytes"},
    {"clairfs_backing_files_total", "counter", "Files read from the backing store.",
     "backing/files"},
    {"clairfs_backing_errors_total", "counter", "Backing-store errors.", "backing/errors"},
    {"clairfs_backing_saved_reads_total", "counter",
     "Opens of tiered files a direct read would have paid a backing read for, less the backing "
     "reads clairfs made.",
     "backing/saved_reads"},
    {"clairfs_backing_saved_bytes_total", "counter",
     "Bytes of tiered files opened that the backing store was spared: their sizes less the "
     "bytes read from it.",
     "backing/saved_bytes"},
    {"clairfs_stall_seconds_total", "counter", "Time readers spent waiting for the backing store.",
     "stall_seconds"},
    {"clairfs_prefetch_lead_samples", "gauge",
     "Samples ready in RAM ahead of the slowest local rank.", "prefetch/lead"},
    {"clairfs_prefetched_files_total", "counter", "Files prefetched.", "prefetch/prefetched"},
    {"clairfs_demand_fetches_total", "counter", "Files fetched because a read needed them.",
     "prefetch/demand_fetches"},
    {"clairfs_one_copy_dropping", "gauge",
     "1 while the last close of a RAM-tier file drops its page-cache copy (--one-copy).",
     "prefetch/one_copy/dropping"},
};

} // namespace

std::string prometheus_text(const json& st, const std::string& mountpoint) {
    Writer w(mountpoint);
    const json& on = status_at(st, "ssd/enabled");
    const bool ssd = on.is_boolean() && on.get<bool>();
    w.family("clairfs_up", "gauge", "1: the mount answered its status file.");
    w.series("clairfs_up", "", 1);
    if (const json& mode = status_at(st, "mode"); mode.is_string()) {
        w.family("clairfs_mode", "gauge",
                 "The prediction mode (unregistered, clairvoyant, fallback): 1 for the current.");
        w.series("clairfs_mode", "mode=\"" + label_value(mode.get<std::string>()) + "\"", 1);
    }
    for (const Metric& m : metrics) {
        if (m.ssd_only && !ssd) continue;
        w.one(m.name, m.type, m.help, st, m.path);
    }
    if (const json& p = status_at(st, "passthrough/state"); p.is_string()) {
        w.family("clairfs_passthrough_enabled", "gauge",
                 "1 while the kernel reads large untiered files itself (FUSE passthrough).");
        w.series("clairfs_passthrough_enabled", "", p.get<std::string>() == "on" ? 1 : 0);
    }
    if (const json& t = status_at(st, "transport/in_use"); t.is_string()) {
        w.family("clairfs_io_uring", "gauge",
                 "1 while the kernel's requests come over FUSE's io_uring rings, 0 over /dev/fuse.");
        w.series("clairfs_io_uring", "", t.get<std::string>() == "io_uring" ? 1 : 0);
    }
    if (const json& kb = status_at(st, "readahead/kb"); kb.is_number()) {
        w.family("clairfs_kernel_readahead_bytes", "gauge",
                 "The kernel's readahead on the mount (--max-read where root could set it).");
        w.series("clairfs_kernel_readahead_bytes", "", kb.get<double>() * 1024);
    }
    if (const json& r = status_at(st, "requests"); r.is_object() && !r.empty()) {
        w.family("clairfs_fuse_requests_total", "counter", "FUSE requests served, by kind.");
        for (const auto& [kind, n] : r.items())
            if (n.is_number())
                w.series("clairfs_fuse_requests_total", "kind=\"" + label_value(kind) + "\"",
                         n.get<double>());
    }
    return w.take();
}

} // namespace clairfs::cli
