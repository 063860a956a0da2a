// SPDX-License-Identifier: MIT
// parse_control: one control-file write, typed key by key. The job keys go
// through order::set_job_key, so the control file, `clairfs order` and its
// --config agree on every range and message.
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/control/registration.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/strict_json.hpp"
#include "clairfs/config/utf8_text.hpp"
#include "clairfs/layout/framework_layout.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace clairfs::control {
namespace {

using nlohmann::json;

// The JSON type a job key takes, from how `clairfs order --help` names its
// value: counts and the seed are numbers, flags booleans, the rest words.
config::JsonType job_key_type(std::string_view value_name) {
    if (value_name == "N" || value_name == "INT" || value_name == "FLOAT")
        return config::JsonType::number;
    if (value_name == "BOOL") return config::JsonType::boolean;
    return config::JsonType::string;
}

const order::JobKeyInfo* find_job_key(std::string_view key) {
    for (const auto& k : order::job_keys())
        if (k.name == key) return &k;
    return nullptr;
}

// The text of `v` for `key`, or the reason naming the key.
std::string value_text(const std::string& key, const json& v, config::JsonType type,
                       std::string& out) {
    std::string why = config::json_value_text(v, type, out);
    return why.empty() ? "" : key + " " + why;
}

std::string set_ranks(Registration& reg, const json& v) {
    std::string text;
    if (auto why = value_text("ranks", v, config::JsonType::integer_list, text); !why.empty())
        return why;
    if (v.empty()) return "ranks must list at least one rank";
    std::vector<uint32_t> ranks;
    for (const auto& e : v) {
        uint64_t r = e.get<uint64_t>();
        if (r >= (1u << 24)) return "ranks: " + std::to_string(r) + " is out of range";
        ranks.push_back(static_cast<uint32_t>(r));
    }
    std::ranges::sort(ranks);
    if (auto dup = std::ranges::adjacent_find(ranks); dup != ranks.end())
        return "ranks lists rank " + std::to_string(*dup) + " twice";
    reg.ranks = std::move(ranks);
    return "";
}

std::string set_root(Registration& reg, const json& v) {
    std::string root;
    if (auto why = value_text("root", v, config::JsonType::string, root); !why.empty()) return why;
    std::string given = root;
    // One spelling per directory, so a registration reads back as written
    // whether or not the user added "./" or a trailing slash.
    while (root.starts_with("./")) root.erase(0, 2);
    while (root.ends_with('/')) root.pop_back();
    if (root == ".") root.clear();
    // Judged once spelled so: ".//x" is "/x", which must not read back as
    // a root the control file refuses.
    if (given.starts_with('/') || root.starts_with('/'))
        return "root must be relative to the mount root (such as \"train\"), not '" +
               config::message_text(given) + "'";
    reg.root = root;
    return "";
}

std::string set_layout(Registration& reg, const json& v) {
    std::string text;
    if (auto why = value_text("layout", v, config::JsonType::string, text); !why.empty())
        return why;
    if (!layout::parse_layout(text, reg.layout))
        return "invalid value for layout: " + config::message_text(text) +
               " (expected imagefolder, sorted, list, ranges, keras_directory or glob)";
    reg.layout_given = true;
    return "";
}

std::string set_manifest(Registration& reg, const json& v) {
    if (v.is_null()) {
        reg.manifest.clear();
        return "";
    }
    std::string path;
    if (auto why = value_text("manifest", v, config::JsonType::string, path); !why.empty())
        return why;
    if (path.starts_with('/'))
        return "manifest must be a path relative to the mount root, not '" +
               config::message_text(path) + "'";
    reg.manifest = path;
    return "";
}

std::string set_n(Registration& reg, const json& v) {
    if (v.is_null()) {
        reg.n.reset();
        return "";
    }
    std::string text;
    if (auto why = value_text("n", v, config::JsonType::number, text); !why.empty()) return why;
    uint64_t n;
    if (!config::parse_count(text, n) || n == 0 || n > order::max_samples)
        return "invalid value for n: " + text + " (expected an integer from 1 to " +
               std::to_string(order::max_samples) + ")";
    reg.n = n;
    return "";
}

// A key of `clairfs order`. epochs and num_samples may be null: their
// defaults ("until the job stops", "the dataset size") have no number.
std::string set_job(Registration& reg, const std::string& key, const json& v) {
    if (key == "rank")
        return "rank is not a control-file key: use ranks, the list of the job's ranks whose "
               "loaders run on this node (such as [0, 1])";
    const order::JobKeyInfo* info = find_job_key(key);
    if (!info) return "unknown key '" + config::message_text(key) + "'";
    if (v.is_null() && key == "epochs") {
        reg.spec.epochs = unlimited_epochs;
        reg.epochs_given = false;
        return "";
    }
    if (v.is_null() && key == "num_samples") {
        reg.spec.num_samples.reset();
        return "";
    }
    if (v.is_null() && key == "pattern") {
        reg.spec.pattern.clear();
        return "";
    }
    // seed=None and the other Python None defaults of framework tensorflow.
    if (v.is_null() && (key == "seed" || key == "global_seed" || key == "shuffle_buffer" ||
                        key == "validation_split" || key == "subset"))
        return order::set_job_key(reg.spec, key, "none");
    std::string text;
    if (auto why = value_text(key, v, job_key_type(info->value_name), text); !why.empty())
        return why;
    if (auto why = order::set_job_key(reg.spec, key, text); !why.empty()) return why;
    if (key == "epochs") reg.epochs_given = true;
    return "";
}

// How far a search goes, in draws: an integer from 0 to `max`.
std::string set_draws(const char* key, uint64_t max, uint64_t& field, const json& v) {
    std::string text;
    if (auto why = value_text(key, v, config::JsonType::number, text); !why.empty()) return why;
    uint64_t d;
    if (!config::parse_count(text, d) || d > max)
        return std::string("invalid value for ") + key + ": " + text +
               " (expected an integer from 0 to " + std::to_string(max) + ")";
    field = d;
    return "";
}

std::string set_key(Registration& reg, const std::string& key, const json& v) {
    if (key == "ranks") return set_ranks(reg, v);
    // resync_draws: a search of 2^24 candidates takes tens of seconds of
    // one core. pre_draws_max: 2^32 words, about 140 s of one core
    // (bench/RESULTS.md, "Chain search").
    if (key == "resync_draws")
        return set_draws("resync_draws", uint64_t{1} << 24, reg.resync_draws, v);
    if (key == "pre_draws_max")
        return set_draws("pre_draws_max", uint64_t{1} << 32, reg.pre_draws_max, v);
    if (key == "root") return set_root(reg, v);
    if (key == "layout") return set_layout(reg, v);
    if (key == "manifest") return set_manifest(reg, v);
    if (key == "n") return set_n(reg, v);
    return set_job(reg, key, v);
}

// What no single key can tell: how the keys fit together.
std::string check_combination(const Registration& reg) {
    const order::JobSpec& s = reg.spec;
    if (layout::reads_manifest(reg.layout) && reg.manifest.empty())
        return std::string("layout ") + layout::layout_name(reg.layout) +
               " needs manifest (the file listing the samples, relative to the mount root)";
    if (!layout::reads_manifest(reg.layout) && !reg.manifest.empty())
        return "manifest is only read with layout list or ranges";
    if (s.world_size > 1 && s.sampler != order::SamplerKind::distributed)
        return "world_size " + std::to_string(s.world_size) +
               " needs sampler distributed (only DistributedSampler splits the dataset by rank)";
    for (uint32_t r : reg.ranks)
        if (r >= s.world_size)
            return "rank " + std::to_string(r) + " in ranks is not below world_size " +
                   std::to_string(s.world_size);
    // Everything validate() checks that does not depend on the dataset; it
    // runs again with the real sample count once the dataset is built.
    // n = the most samples there can be: nothing here is about a size.
    order::JobSpec first = s;
    first.rank = reg.ranks.front();
    return order::validate(first, order::max_samples);
}

} // namespace

bool valid_job_id(std::string_view id) {
    if (id.empty() || id.size() > 64) return false;
    return std::ranges::all_of(id, [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

namespace {

std::string set_job_id(std::string& id, const json& v) {
    if (!v.is_string() || !valid_job_id(v.get<std::string>()))
        return "job must be a name of 1 to 64 letters, digits, '.', '_' or '-'";
    id = v.get<std::string>();
    return "";
}

// One loader's keys: "job" is the job's (it must agree across loaders).
std::string parse_loader(const json& j, Registration& reg, std::string& job, bool& job_given) {
    if (!j.is_object()) return "expected a JSON object for each loader, such as {\"root\": \"val\"}";
    reg.spec.epochs = unlimited_epochs;
    for (const auto& [key, value] : j.items()) {
        std::string name = config::canonical_key(key);
        if (name == "job") {
            std::string id;
            if (auto why = set_job_id(id, value); !why.empty()) return why;
            if (job_given && id != job) return "the loaders of one registration name two jobs";
            job = id;
            job_given = true;
            continue;
        }
        if (name == "stage" || name == "unregister" || name == "loaders" || name == "from_loader" ||
            name == "replace")
            return name + " belongs to the whole registration, not to one loader";
        if (auto why = set_key(reg, name, value); !why.empty()) return why;
    }
    std::optional<layout::LayoutKind> given;
    if (reg.layout_given) given = reg.layout;
    if (auto why = layout::layout_for_job(reg.spec, given, reg.layout); !why.empty()) return why;
    return check_combination(reg);
}

// {"loaders": [...], other keys}: each loader is the other keys, then its own.
std::string loader_objects(json& j, std::vector<json>& out) {
    auto it = j.find("loaders");
    if (it == j.end()) {
        out.push_back(j);
        return "";
    }
    if (!it->is_array() || it->empty()) return "loaders must be a non-empty list of objects";
    json common = j;
    common.erase("loaders");
    for (const auto& l : *it) {
        if (!l.is_object()) return "expected a JSON object for each loader, such as {\"root\": \"val\"}";
        json merged = common;
        for (const auto& [k, v] : l.items()) {
            // A loader's spelling of a key replaces the common one's.
            std::string name = config::canonical_key(k);
            for (auto c = merged.begin(); c != merged.end(); ++c)
                if (config::canonical_key(c.key()) == name) {
                    merged.erase(c);
                    break;
                }
            merged[k] = v;
        }
        out.push_back(std::move(merged));
    }
    return "";
}

constexpr size_t max_loaders = 64;

// image_dataset_from_directory(subset="both") returns two datasets, and
// fit runs the training one, then the validation one: a loader registered
// with subset "both" stands for those two. True if any was expanded.
bool expand_both_subsets(std::vector<json>& loaders) {
    bool any = false;
    std::vector<json> out;
    for (json& l : loaders) {
        auto it = l.end();
        if (!l.is_object()) { // refused by parse_loader
            out.push_back(std::move(l));
            continue;
        }
        for (auto k = l.begin(); k != l.end(); ++k)
            if (config::canonical_key(k.key()) == "subset") it = k;
        if (it == l.end() || *it != "both") {
            out.push_back(std::move(l));
            continue;
        }
        any = true;
        *it = "training";
        json val = l;
        val[it.key()] = "validation_of_both";
        out.push_back(std::move(l));
        out.push_back(std::move(val));
    }
    loaders = std::move(out);
    return any;
}

// {"stage": true} alone starts a stage-in and leaves the registration as
// it is; with registration keys it registers, then stages. `done`: the
// write was nothing else.
std::string take_stage(json& j, ControlRequest& req, bool& done) {
    auto st = j.find("stage");
    if (st == j.end()) return "";
    if (!st->is_boolean()) return "stage must be true or false";
    req.stage = st->get<bool>();
    j.erase(st);
    if (!j.empty()) return "";
    if (!req.stage) return "stage: false on its own does nothing";
    req.stage_only = true;
    done = true;
    return "";
}

// A true-or-false key about a whole registration ("from_loader",
// "replace"), taken out of `j` into `out`; on its own it says nothing.
std::string take_registration_flag(json& j, const std::string& key, bool& out) {
    auto f = j.find(key);
    if (f == j.end()) return "";
    if (!f->is_boolean()) return key + " must be true or false";
    out = f->get<bool>();
    j.erase(f);
    return j.empty() ? key + " goes with a registration, not on its own" : "";
}

// `done`: an unregistration, of one job or of every one.
std::string take_unregister(json& j, ControlRequest& req, bool& done) {
    auto u = j.find("unregister");
    if (u == j.end()) return "";
    if (!u->is_boolean()) return "unregister must be true or false";
    if (!u->get<bool>()) {
        j.erase(u);
        return "";
    }
    auto job = j.find("job");
    if (j.size() > (job == j.end() ? 1u : 2u) || req.stage)
        return "unregister: true takes no other keys than job";
    if (job != j.end())
        if (auto why = set_job_id(req.job.id, *job); !why.empty()) return why;
    req.unregister = true;
    if (job == j.end()) req.job.id.clear(); // every job
    done = true;
    return "";
}

// A write that is one JSON object: its keys about the whole write are
// taken out, then what is left is its loaders. `done`: there are none to
// parse (the write unregisters or only stages).
std::string take_object(json& j, ControlRequest& req, std::vector<json>& loaders, bool& done) {
    if (j.empty()) {
        req.unregister = true;
        done = true;
        return "";
    }
    if (auto why = take_stage(j, req, done); !why.empty() || done) return why;
    if (auto why = take_registration_flag(j, "from_loader", req.from_loader); !why.empty())
        return why;
    if (auto why = take_unregister(j, req, done); !why.empty() || done) return why;
    // After unregister, which takes no other key: replacing is only about a
    // registration.
    if (auto why = take_registration_flag(j, "replace", req.replace); !why.empty()) return why;
    req.job.listed = j.contains("loaders");
    return loader_objects(j, loaders);
}

std::string parse_loaders(std::vector<json>& loaders, ControlRequest& req) {
    if (expand_both_subsets(loaders)) req.job.listed = true;
    if (loaders.size() > max_loaders)
        return "more than " + std::to_string(max_loaders) + " loaders in one registration";
    bool job_given = false;
    for (const json& l : loaders) {
        Registration reg;
        if (auto why = parse_loader(l, reg, req.job.id, job_given); !why.empty())
            return loaders.size() > 1 ? "loader " + std::to_string(req.job.loaders.size() + 1) +
                                            ": " + why
                                      : why;
        req.job.loaders.push_back(std::move(reg));
    }
    if (req.job.loaders.size() > max_loaders)
        return "more than " + std::to_string(max_loaders) + " loaders in one registration";
    return "";
}

} // namespace

std::string parse_control(std::string_view text, ControlRequest& out) {
    json j;
    if (auto why = config::parse_strict_json(text, j); !why.empty()) return why;
    ControlRequest req;
    std::vector<json> loaders;
    bool done = false;
    if (j.is_array()) {
        if (j.empty()) return "a list of loaders must not be empty";
        loaders.assign(j.begin(), j.end());
        req.job.listed = true;
    } else if (!j.is_object()) {
        return "expected a JSON object, such as {\"seed\": 42}, or a list of loaders";
    } else if (auto why = take_object(j, req, loaders, done); !why.empty()) {
        return why;
    }
    if (!done)
        if (auto why = parse_loaders(loaders, req); !why.empty()) return why;
    out = std::move(req);
    return "";
}

} // namespace clairfs::control
