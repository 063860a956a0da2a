// SPDX-License-Identifier: MIT
#include "status_summary.hpp"

#include <algorithm>
#include <cstdio>

namespace clairfs::cli {
namespace {

using nlohmann::json;


double number(const json& v) {
    return v.is_number() ? v.get<double>() : 0.0;
}

std::string line(const char* label, const std::string& value) {
    char out[512];
    snprintf(out, sizeof out, "%-12s %s\n", label, value.c_str());
    return out;
}

std::string text_of(const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string ranks_lines(const json& ranks) {
    std::string out;
    for (const auto& r : ranks) {
        char buf[256];
        snprintf(buf, sizeof buf, "rank %s: epoch %s, %s of %s opened",
                 text_of(status_at(r, "rank")).c_str(), text_of(status_at(r, "epoch")).c_str(),
                 text_of(status_at(r, "position")).c_str(), text_of(status_at(r, "samples")).c_str());
        std::string l = buf;
        if (double rate = number(status_at(r, "samples_per_second")); rate > 0) {
            snprintf(buf, sizeof buf, ", %.0f samples/s", rate);
            l += buf;
        }
        out += line("", l);
    }
    return out;
}

// "+1 +1": each epoch's draw offset past the first, where one was found.
std::string offsets(const json& epochs) {
    std::string out;
    bool any = false;
    for (const auto& e : epochs) {
        if (e.contains("tf_iterator")) {
            out += " " + text_of(e["tf_iterator"]);
            any |= e["tf_iterator"] != e["epoch"];
        } else if (e.contains("seed_epoch")) {
            out += " " + text_of(e["seed_epoch"]);
            any |= e["seed_epoch"] != e["epoch"];
        } else if (e.contains("draw_offset")) {
            out += " +" + text_of(e["draw_offset"]);
            any |= number(e["draw_offset_words"]) > 0;
        }
    }
    return any ? out : "";
}

// One line per loader of every job, when there is more than one of them.
std::string jobs_lines(const json& jobs) {
    size_t loaders = 0;
    for (const auto& j : jobs) loaders += j["loaders"].size();
    if (jobs.size() < 2 && loaders < 2) {
        if (jobs.size() == 1 && loaders == 1) {
            std::string o = offsets(jobs[0]["loaders"][0]["epochs"]);
            const json& first = jobs[0]["loaders"][0];
            if (!o.empty())
                return line(first.contains("framework") && first["framework"] == "tensorflow"
                                ? "tf iterator:"
                                : first["sampler"] == "distributed" ? "seed+epoch:"
                                                                   : "draw offset:",
                            o.substr(1) + " (per epoch; the chain found by searching)");
        }
        return "";
    }
    std::string out;
    for (const auto& j : jobs) {
        std::string head = "job " + text_of(j["id"]) + " (" + text_of(j["state"]) + ", " +
                           std::to_string(j["pids"].size()) + " processes)";
        out += line("", head);
        for (const auto& l : j["loaders"]) {
            char buf[256];
            std::string name = text_of(l["root"]);
            if (l.contains("subset") && l["subset"].is_string())
                name += "' (" + l["subset"].get<std::string>() + ")";
            else
                name += "'";
            snprintf(buf, sizeof buf, "  loader '%s: %s, epoch %s, match rate %d%%",
                     name.c_str(), text_of(l["mode"]).c_str(),
                     text_of(l["epoch"]).c_str(),
                     static_cast<int>(number(l["match_rate"]) * 100 + 0.5));
            std::string o = offsets(l["epochs"]);
            out += line("", buf + (o.empty() ? "" : ", offsets" + o));
        }
    }
    return out;
}

// The deep search along the global chain, per loader that ran one: under
// way (and not prefetching), found (the draws before the loader), or not.
std::string chain_search_lines(const json& jobs) {
    std::string out;
    for (const auto& j : jobs)
        for (const auto& l : j["loaders"]) {
            const json& c = l.contains("chain_search") ? l["chain_search"] : json();
            if (!c.is_object()) continue;
            char buf[256];
            std::string state = text_of(c["state"]);
            if (state == "searching")
                snprintf(buf, sizeof buf,
                         "loader '%s': searching, %.0f%% of %s words (%.1f s of CPU); not "
                         "prefetching meanwhile",
                         text_of(l["root"]).c_str(),
                         100 * number(c["scanned"]) / std::max(1.0, number(c["words"])),
                         text_of(c["words"]).c_str(), number(c["cpu_seconds"]));
            else if (state == "found")
                snprintf(buf, sizeof buf,
                         "loader '%s': found: the job drew %s words before it (a model's "
                         "initialisation?), %.1f s of CPU",
                         text_of(l["root"]).c_str(), text_of(l["draw_offset"]).c_str(),
                         number(c["cpu_seconds"]));
            else
                snprintf(buf, sizeof buf, "loader '%s': no seed in %s words (%.1f s of CPU)",
                         text_of(l["root"]).c_str(), text_of(c["words"]).c_str(),
                         number(c["cpu_seconds"]));
            out += line("chain search:", buf);
        }
    return out;
}

} // namespace

std::string bytes_text(double b) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    char out[32];
    snprintf(out, sizeof out, u ? "%.1f %s" : "%.0f %s", b, units[u]);
    return out;
}

std::string stage_line(const json& st) {
    double done = number(status_at(st, "done_bytes")), total = number(status_at(st, "total_bytes"));
    double frac = total > 0 ? std::min(1.0, done / total) : 0;
    constexpr int width = 24;
    int filled = static_cast<int>(frac * width + 0.5);
    std::string bar = "[" + std::string(static_cast<size_t>(filled), '#') +
                      std::string(static_cast<size_t>(width - filled), '.') + "]";
    char buf[256];
    snprintf(buf, sizeof buf, "%s %3.0f%% %s of %s into %s, %s", bar.c_str(), frac * 100,
             bytes_text(done).c_str(), bytes_text(total).c_str(),
             text_of(status_at(st, "target")).c_str(), text_of(status_at(st, "state")).c_str());
    std::string out = buf;
    if (text_of(status_at(st, "state")) == "running") {
        snprintf(buf, sizeof buf, ", %s/s",
                 bytes_text(number(status_at(st, "rate_bytes_per_second"))).c_str());
        out += buf;
        if (const json& eta = status_at(st, "eta_seconds"); eta.is_number()) {
            snprintf(buf, sizeof buf, ", ETA %.0f s", number(eta));
            out += buf;
        }
    }
    return out;
}

namespace {

// Job detection: what it is doing, and a detected job's registration as
// one line of JSON the user can pin in the job (write it to the control
// file, or pass it to clairfs mount --register).
std::string detection_lines(const json& d) {
    std::string state = text_of(status_at(d, "state"));
    if (state == "null" || state == "off") return "";
    std::string what = state;
    if (const json& r = status_at(d, "result"); r.is_string()) what += ": " + r.get<std::string>();
    if (const json& w = status_at(d, "next_search_in_seconds"); w.is_number()) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "; next search in %.0f s (searches keep within %g%% of one core)",
                      w.get<double>(), status_at(d, "cpu_share").is_number()
                                           ? status_at(d, "cpu_share").get<double>() * 100
                                           : 0.0);
        what += buf;
    }
    std::string out = line("detection:", what);
    if (const json& c = status_at(d, "chain_search"); c.is_object()) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "%s, %.0f of %.0f words of %.0f seeds' chains, %.1f s CPU",
                      text_of(status_at(c, "state")).c_str(), number(status_at(c, "scanned")),
                      number(status_at(c, "words")), number(status_at(c, "seeds")),
                      number(status_at(c, "cpu_seconds")));
        out += line("chain search:", buf);
    }
    if (const json& reg = status_at(d, "registration"); reg.is_object())
        out += line("pin it:", reg.dump());
    // Several detected jobs (a training and a validation loader): each.
    if (const json& regs = status_at(d, "registrations"); regs.is_array())
        for (const json& reg : regs) out += line("pin it:", reg.dump());
    return out;
}

// SSD writes skipped because more waited than the writer's bound: each is
// read from the backing store again when next wanted. Said only when some
// were, with why.
std::string skipped_writes(const json& ssd) {
    double skipped = number(status_at(ssd, "skipped"));
    if (skipped <= 0) return "";
    return ", " + std::to_string(static_cast<uint64_t>(skipped)) +
           " writes skipped (the backing store outran the SSD; those are read from it again)";
}

// "mode:" and, after a refused registration, "error:".
std::string mode_lines(const json& s) {
    std::string mode = text_of(status_at(s, "mode"));
    if (const json& reason = status_at(s, "reason"); reason.is_string())
        mode += " (" + reason.get<std::string>() + ")";
    std::string out = line("mode:", mode);
    if (const json& err = status_at(s, "error"); err.is_string())
        out += line("error:", err.get<std::string>() + " (the last registration was refused)");
    return out;
}

// A registered job's epoch and match rate, its ranks, loaders and searches.
std::string registered_lines(const json& s) {
    const json& registered = status_at(s, "registered");
    if (!registered.is_string() && !(registered.is_boolean() && registered.get<bool>()))
        return "";
    char buf[128];
    std::string epoch = text_of(status_at(s, "epoch"));
    const json& rate = status_at(s, "match_rate");
    snprintf(buf, sizeof buf, "%s, match rate %s", epoch.c_str(),
             rate.is_number()
                 ? (std::to_string(static_cast<int>(number(rate) * 100 + 0.5)) + "%").c_str()
                 : "-");
    std::string out = line("epoch:", buf);
    out += ranks_lines(status_at(s, "ranks"));
    if (status_at(s, "jobs").is_array()) {
        out += jobs_lines(status_at(s, "jobs"));
        out += chain_search_lines(status_at(s, "jobs"));
    }
    return out;
}

std::string ram_line(const json& s) {
    double hits = number(status_at(s, "ram/hits")), misses = number(status_at(s, "ram/misses"));
    char buf[256];
    snprintf(
        buf, sizeof buf, "%s of %s, hit rate %s",
        bytes_text(number(status_at(s, "ram/bytes"))).c_str(),
        bytes_text(number(status_at(s, "ram/capacity"))).c_str(),
        hits + misses > 0
            ? (std::to_string(static_cast<int>(100 * hits / (hits + misses) + 0.5)) + "%").c_str()
            : "-");
    std::string ram = buf;
    // Whether the page cache keeps a second copy of what the tier holds.
    if (status_at(s, "prefetch/one_copy/dropping").is_boolean())
        ram += status_at(s, "prefetch/one_copy/dropping").get<bool>()
                   ? ", one copy (dropped from the page cache at close)"
                   : ", the page cache may keep a second copy";
    return line("ram:", ram);
}

// The opens the kernel served from the SSD tier itself (passthrough),
// and under which check: "; 120 files read by the kernel (--ssd-check
// once)"; nothing while it is off.
std::string kernel_reads(const json& k, const char* what) {
    if (const json& on = status_at(k, "on"); !on.is_boolean() || !on.get<bool>()) return "";
    std::string out = "; " + std::to_string(static_cast<uint64_t>(number(status_at(k, "opens")))) +
                      " " + what + " read by the kernel";
    if (const json& check = status_at(k, "check"); check.is_string())
        out += " (--ssd-check " + check.get<std::string>() + ")";
    return out;
}

std::string ssd_line(const json& s) {
    if (!status_at(s, "ssd/enabled").is_boolean()) return "";
    if (status_at(s, "ssd/enabled").get<bool>()) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s of %s, %.0f hits, %.0f errors",
                 bytes_text(number(status_at(s, "ssd/bytes"))).c_str(),
                 bytes_text(number(status_at(s, "ssd/capacity"))).c_str(),
                 number(status_at(s, "ssd/hits")), number(status_at(s, "ssd/errors")));
        return line("ssd:", buf + skipped_writes(status_at(s, "ssd")) +
                                kernel_reads(status_at(s, "ssd/kernel"), "files"));
    }
    if (const json& err = status_at(s, "ssd/error"); err.is_string())
        return line("ssd:", "off: " + err.get<std::string>());
    return "";
}

// What became of the chunks read ahead and pushed: predicted, dropped
// unread, pushed, dropped once read, and the drop-behind of shards.
std::string chunk_traffic(const json& c) {
    std::string out;
    if (double predicted = number(status_at(c, "predicted")); predicted > 0)
        out += ", " + std::to_string(static_cast<uint64_t>(predicted)) + " predicted";
    if (double wasted = number(status_at(c, "read_ahead_wasted")); wasted > 0)
        out += " (" + std::to_string(static_cast<uint64_t>(wasted)) + " dropped unread)";
    // A ranges job's samples: into the page cache ahead, out of it behind.
    if (double pushed = number(status_at(c, "pushed/samples")); pushed > 0)
        out += "; " + std::to_string(static_cast<uint64_t>(pushed)) + " samples pushed";
    if (double dropped = number(status_at(c, "dropped")); dropped > 0)
        out += ", " + std::to_string(static_cast<uint64_t>(dropped)) + " dropped once read";
    // Shards read from start to end, their pages dropped once passed.
    if (const json& on = status_at(c, "drop_behind"); on.is_boolean() && on.get<bool>())
        out += "; drop-behind on (" +
               std::to_string(static_cast<uint64_t>(number(status_at(c, "dropped_behind")))) +
               " chunks)";
    return out;
}

// The chunks' SSD tier, after the chunks' other figures.
std::string chunk_ssd(const json& c) {
    if (const json& on = status_at(c, "ssd/enabled"); on.is_boolean() && on.get<bool>()) {
        char buf[256];
        snprintf(buf, sizeof buf, "; ssd %s of %s, %.0f hits",
                 bytes_text(number(status_at(c, "ssd/bytes"))).c_str(),
                 bytes_text(number(status_at(c, "ssd/capacity"))).c_str(),
                 number(status_at(c, "ssd/hits")));
        return buf + skipped_writes(status_at(c, "ssd")) +
               kernel_reads(status_at(c, "ssd/kernel"), "whole files");
    }
    if (const json& err = status_at(c, "ssd/error"); err.is_string())
        return "; ssd off: " + err.get<std::string>();
    return "";
}

// Files held by chunk: how many, RAM's share, and the SSD's.
std::string chunks_line(const json& s) {
    const json& c = status_at(s, "chunks");
    if (!c.is_object()) return "";
    char buf[256];
    snprintf(buf, sizeof buf, "%.0f files in %.0f chunks of %s; ram %s of %s; %.0f read ahead",
             number(status_at(c, "files")), number(status_at(c, "chunks")),
             bytes_text(number(status_at(c, "chunk_size"))).c_str(),
             bytes_text(number(status_at(c, "ram/bytes"))).c_str(),
             bytes_text(number(status_at(c, "ram/capacity"))).c_str(),
             number(status_at(c, "read_ahead")));
    return line("chunks:", buf + chunk_traffic(c) + chunk_ssd(c));
}

std::string backing_line(const json& s) {
    char buf[256];
    snprintf(buf, sizeof buf, "%.0f reads, %s, %.0f file reads saved",
             number(status_at(s, "backing/reads")),
             bytes_text(number(status_at(s, "backing/bytes"))).c_str(),
             number(status_at(s, "backing/saved_reads")));
    std::string backing = buf;
    if (const json& saved = status_at(s, "backing/saved_bytes"); saved.is_number())
        backing += " (" + bytes_text(number(saved)) + ")";
    return line("backing:", backing);
}

std::string passthrough_line(const json& s) {
    if (std::string state = text_of(status_at(s, "passthrough/state")); state == "on") {
        char buf[256];
        snprintf(buf, sizeof buf, "on, %.0f opens of large files read by the kernel",
                 number(status_at(s, "passthrough/opens")));
        return line("passthrough:", buf);
    }
    if (const json& why = status_at(s, "passthrough/reason"); why.is_string())
        return line("passthrough:", "off: " + why.get<std::string>());
    return "";
}

// The way requests come (--io-uring) and why: "io_uring (--io-uring
// auto, and the kernel's switch is on), 2 ring threads SCHED_IDLE",
// "/dev/fuse (--io-uring off)".
std::string transport_line(const json& s) {
    std::string in_use = text_of(status_at(s, "transport/in_use"));
    if (in_use == "null") return "";
    if (const json& why = status_at(s, "transport/reason"); why.is_string())
        in_use += " (" + why.get<std::string>() + ")";
    if (in_use.starts_with("io_uring")) {
        const json& idle = status_at(s, "transport/ring_threads_idle");
        const json& refused = status_at(s, "transport/ring_threads_refused");
        if (idle.is_number_unsigned() && idle.get<uint64_t>() > 0)
            in_use += ", " + idle.dump() + " ring threads SCHED_IDLE";
        if (refused.is_number_unsigned() && refused.get<uint64_t>() > 0)
            in_use += ", " + refused.dump() + " could not take SCHED_IDLE";
    }
    return line("transport:", in_use);
}

// The kernel's readahead on the mount: "1024 KiB", or "128 KiB (asked
// 1024: raising it needs root)".
std::string readahead_line(const json& s) {
    const json& kb = status_at(s, "readahead/kb");
    const json& why = status_at(s, "readahead/reason");
    if (!kb.is_number() && !why.is_string()) return "";
    std::string text = kb.is_number() ? kb.dump() + " KiB" : "unknown";
    if (why.is_string())
        text += " (asked " + status_at(s, "readahead/asked_kb").dump() + " KiB: " +
                why.get<std::string>() + ")";
    return line("readahead:", text);
}

// Where the daemon sees opens: fanotify, OPEN round trips, or first READs.
std::string opens_line(const json& s) {
    std::string source = text_of(status_at(s, "opens/source"));
    if (source == "fanotify") {
        char buf[256];
        snprintf(buf, sizeof buf, "fanotify, %.0f opens told in %.0f batches",
                 number(status_at(s, "opens/opens")), number(status_at(s, "opens/batches")));
        std::string opens = buf;
        if (double lost = number(status_at(s, "opens/overflows")); lost > 0)
            opens += ", " + std::to_string(static_cast<uint64_t>(lost)) + " queue overflows";
        return line("opens:", opens);
    }
    if (source == "null") return "";
    std::string opens = source == "reads" ? "a file's first READ (--kernel-opens)"
                                          : "an OPEN round trip each";
    if (const json& why = status_at(s, "opens/why_not"); why.is_string() && source == "fuse")
        opens += " (" + why.get<std::string>() + ")";
    return line("opens:", opens);
}

std::string prefetch_line(const json& s) {
    char buf[256];
    snprintf(buf, sizeof buf, "lead %.0f samples, stalls %.2f s",
             number(status_at(s, "prefetch/lead")), number(status_at(s, "stall_seconds")));
    return line("prefetch:", buf);
}

} // namespace

std::string status_summary(const json& s) {
    std::string out = mode_lines(s);
    out += registered_lines(s);
    if (const json& w = status_at(s, "warning"); w.is_string())
        out += line("warning:", w.get<std::string>());
    out += detection_lines(status_at(s, "detection"));
    out += ram_line(s);
    out += ssd_line(s);
    out += chunks_line(s);
    out += backing_line(s);
    if (std::string state = text_of(status_at(s, "stage/state")); state != "idle" && state != "null")
        out += line("stage:", stage_line(status_at(s, "stage")));
    out += passthrough_line(s);
    out += transport_line(s);
    out += readahead_line(s);
    out += opens_line(s);
    out += prefetch_line(s);
    return out;
}

const json& status_at(const json& j, const char* path) {
    static const json null;
    try {
        return j.at(json::json_pointer(std::string("/") + path));
    } catch (const json::exception&) {
        return null;
    }
}

} // namespace clairfs::cli
