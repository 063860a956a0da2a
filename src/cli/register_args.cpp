// SPDX-License-Identifier: MIT
#include "register_args.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/strict_json.hpp"
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/order/job_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace clairfs::cli {
namespace {

using ojson = nlohmann::ordered_json;

enum class Kind { number, fraction, boolean, string, ranks };

struct ExtraKey {
    const char* name;
    Kind kind;
    const char* value_name;
    const char* help;
};

// The keys the control file has beyond those of `clairfs order`.
const ExtraKey extra_keys[] = {
    {"ranks", Kind::ranks, "R,R...",
     "the job's ranks whose loaders run on this node, such as 0,1, or auto: from the "
     "launcher's environment (torchrun, mpiexec, Slurm) [0]"},
    {"root", Kind::string, "DIR", "the dataset directory inside the mount [the mount root]"},
    {"layout", Kind::string, "L",
     "imagefolder, sorted, list or ranges [imagefolder; tensorflow: chosen by pipeline]"},
    {"manifest", Kind::string, "FILE", "layout list or ranges: the file listing the samples (for ranges, "
                                         "clairfs ranges' output), in the mount"},
    {"n", Kind::number, "N", "len(dataset) as the job sees it, checked against the layout"},
    {"job", Kind::string, "ID",
     "the job's name: another job may register beside it on the same mount [default]"},
    {"resync_draws", Kind::number, "N",
     "how far to search for the seed when an epoch's opens do not fit (0: never) [4096]"},
    {"pre_draws_max", Kind::number, "N",
     "how far down the global generator's chain to search for the first epoch's seed when its "
     "opens do not fit: the draws a model's initialisation may make [1073741824]"},
    {"replace", Kind::boolean, "",
     "replace the job of this name even while another process runs it (refused otherwise)"},
};

bool key_kind(const std::string& key, Kind& out) {
    for (const auto& k : extra_keys)
        if (key == k.name) {
            out = k.kind;
            return true;
        }
    for (const auto& k : order::job_keys())
        if (k.name == key) {
            out = k.value_name == "BOOL"                         ? Kind::boolean
                  : k.value_name == "N" || k.value_name == "INT" ? Kind::number
                  : k.value_name == "FLOAT"                      ? Kind::fraction
                                                                 : Kind::string;
            return true;
        }
    return false;
}

bool parse_number(const std::string& text, ojson& out) {
    const char* end = text.data() + text.size();
    if (text.starts_with('-')) {
        int64_t v;
        auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc{} || p != end) return false;
        out = v;
    } else {
        uint64_t v;
        auto [p, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc{} || p != end) return false;
        out = v;
    }
    return true;
}

bool parse_ranks(const std::string& text, ojson& out) {
    if (text == "auto") {
        out = text; // resolved once every flag is read: it may need --world-size
        return true;
    }
    out = ojson::array();
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = std::min(text.find(',', start), text.size());
        uint64_t r;
        if (!config::parse_count(std::string_view(text).substr(start, comma - start), r))
            return false;
        out.push_back(r);
        start = comma + 1;
    }
    return true;
}

// `key` made canonical, with its kind; "--no-KEY" of a boolean key is KEY
// negated. "" or why it is no key.
std::string known_key(std::string& key, Kind& kind, bool& negated) {
    key = config::canonical_key(key);
    if (key == "rank")
        return "--rank is not a registration key: use --ranks (the ranks running on this node, "
               "such as 0,1)";
    if (!key_kind(key, kind) && key.starts_with("no_") && key_kind(key.substr(3), kind) &&
        kind == Kind::boolean) {
        key = key.substr(3);
        negated = true;
    } else if (!key_kind(key, kind)) {
        return "unknown option '--" + key + "'";
    }
    return "";
}

// A flag's text as the JSON value of its kind; false if it is not one. A
// bare flag is a boolean's true.
bool json_value(Kind kind, const std::string& value, bool bare, bool negated, ojson& v) {
    switch (kind) {
    case Kind::number:
        return parse_number(value, v);
    case Kind::fraction: {
        double d = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), d);
        v = d;
        return ec == std::errc{} && p == value.data() + value.size();
    }
    case Kind::boolean: {
        bool b = true;
        bool ok = bare || config::parse_bool(value, b);
        v = negated ? !b : b;
        return ok;
    }
    case Kind::string:
        v = value;
        return true;
    case Kind::ranks:
        return parse_ranks(value, v);
    }
    return true;
}

std::string set_flag(RegisterArgs& a, std::string key, const std::string& value, bool bare) {
    Kind kind = Kind::string;
    bool negated = false;
    if (auto why = known_key(key, kind, negated); !why.empty()) return why;
    if (bare && kind != Kind::boolean) return "--" + key + " needs a value";
    // --seed none: Python's None (framework tensorflow), JSON null.
    bool none = (kind == Kind::number || kind == Kind::fraction) && (value == "none" || value == "null");
    if (none) {
        a.body[key] = nullptr;
        return "";
    }
    ojson v;
    if (!json_value(kind, value, bare, negated, v))
        return "invalid value for --" + key + ": " + value;
    a.body[key] = v;
    return "";
}

std::string read_config(const std::string& path, RegisterArgs& a) {
    std::string text;
    if (!config::read_text_file(path, text, config::max_json_bytes + 1))
        return "cannot read config file '" + path + "'";
    ojson j;
    if (auto why = config::parse_strict_json(text, j); !why.empty()) return path + ": " + why;
    // A list of loaders: the flags become every loader's defaults.
    if (j.is_array()) j = ojson{{"loaders", j}};
    if (!j.is_object()) return path + ": expected a JSON object or a list of loaders";
    // Flags given later override the file; its own keys are judged by the
    // daemon, exactly as if it were written to the control file.
    for (auto& [k, v] : j.items()) a.body[k] = v;
    return "";
}

// `ranks: "auto"` in a registration (or one of its loaders) replaced by the
// ranks the launcher's environment gives this node. `outer` is the
// registration around a loader, whose keys the loader inherits.
std::string resolve_auto_ranks(ojson& reg, const ojson* outer, const EnvLookup& env,
                               std::string& note) {
    auto inherited = [&](const char* key) -> const ojson* {
        if (auto it = reg.find(key); it != reg.end()) return &*it;
        if (outer)
            if (auto it = outer->find(key); it != outer->end()) return &*it;
        return nullptr;
    };
    if (auto l = reg.find("loaders"); l != reg.end() && l->is_array()) {
        for (auto& loader : *l)
            if (loader.is_object())
                if (auto why = resolve_auto_ranks(loader, &reg, env, note); !why.empty())
                    return why;
    }
    auto r = reg.find("ranks");
    if (r == reg.end() || *r != "auto") return "";
    std::optional<uint64_t> world;
    if (const ojson* w = inherited("world_size"); w && w->is_number_unsigned())
        world = w->get<uint64_t>();
    LauncherRanks got;
    if (auto why = launcher_ranks(env, world, got); !why.empty()) return why;
    const ojson* sampler = inherited("sampler");
    bool distributed = sampler && *sampler == "distributed";
    // Only DistributedSampler splits the dataset by rank; any other sampler
    // reads one order, registered as rank 0, however many ranks run it.
    if (!distributed && (got.ranks.size() != 1 || got.ranks[0] != 0))
        return "--ranks auto: the launcher runs ranks " + std::to_string(got.ranks.front()) +
               ".." + std::to_string(got.ranks.back()) + " here (" + got.source +
               "), which only sampler distributed splits the dataset between";
    *r = got.ranks;
    if (!note.empty()) note += "\n";
    note += "ranks " + r->dump() + (got.world_size ? " of " + std::to_string(*got.world_size) : "") +
            " from " + got.source;
    // After the last use of `r`: an ordered_json object is a vector, which
    // an insert may move.
    if (distributed && got.world_size && !inherited("world_size"))
        reg["world_size"] = *got.world_size;
    return "";
}

bool looks_like_flag(const std::string& s) {
    return s.size() > 2 && s.starts_with("--");
}

// Config files first, so that flags override them wherever they stand.
std::string read_config_files(const std::vector<std::string>& args, RegisterArgs& out) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string file;
        if (args[i] == "--config" && i + 1 < args.size())
            file = args[i + 1];
        else if (args[i].starts_with("--config="))
            file = args[i].substr(9);
        else
            continue;
        if (auto why = read_config(file, out); !why.empty()) return why;
    }
    return "";
}

// The flag at args[i], "--key=value", "--key value" (which moves i on) or
// a bare "--key".
std::string take_flag(const std::vector<std::string>& args, size_t& i, RegisterArgs& out) {
    std::string key = args[i].substr(2), value;
    bool bare = false;
    if (size_t eq = key.find('='); eq != std::string::npos) {
        value = key.substr(eq + 1);
        key.resize(eq);
    } else if (i + 1 < args.size() && !looks_like_flag(args[i + 1])) {
        value = args[++i]; // "-5" is a value: a negative seed
    } else {
        bare = true;
    }
    if (key == "config") {
        if (bare) return "--config needs a file";
        return ""; // read_config_files() has read it
    }
    return set_flag(out, key, value, bare);
}

} // namespace

std::string parse_register_args(const std::vector<std::string>& args, RegisterArgs& out,
                                const EnvLookup& env) {
    if (auto why = read_config_files(args, out); !why.empty()) return why;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            out.help = true;
            continue;
        }
        if (!looks_like_flag(a)) {
            if (!out.mount.empty()) return "unexpected argument '" + a + "'";
            out.mount = a;
            continue;
        }
        if (auto why = take_flag(args, i, out); !why.empty()) return why;
    }
    if (out.help) return "";
    if (out.mount.empty()) return "expected MOUNT";
    return resolve_auto_ranks(out.body, nullptr, env, out.note);
}

std::string mount_relative(const std::string& path, const std::string& abs_mount) {
    if (path == abs_mount) return "";
    if (path.starts_with(abs_mount + "/")) return path.substr(abs_mount.size() + 1);
    return path;
}

void print_register_help() {
    printf("usage: clairfs register MOUNT [--config FILE] [--KEY VALUE ...]\n"
           "       clairfs unregister MOUNT\n\n"
           "Registers a training job with a mount, so it prefetches in the job's order: writes\n"
           "the keys as JSON to MOUNT/.clairfs/control (see clairfs-control(5)). Keys may use\n"
           "dashes or underscores; booleans may be given bare (--drop-last) or negated\n"
           "(--no-shuffle). Defaults are PyTorch's.\n\n"
           "  --config FILE          a JSON object of keys, overridden by the flags\n");
    for (const auto& k : extra_keys) {
        std::string flag = std::string("--") + k.name + (*k.value_name ? " " : "") + k.value_name;
        printf("  %-22s %s\n", flag.c_str(), k.help);
    }
    for (const auto& k : order::job_keys()) {
        if (k.name == "rank") continue;
        std::string flag = "--" + std::string(k.name) + " " + std::string(k.value_name);
        std::ranges::replace(flag, '_', '-');
        std::string help(k.help);
        if (k.name == "epochs") help = "how many epochs to predict [until the job stops]";
        printf("  %-22s %s\n", flag.c_str(), help.c_str());
    }
}

} // namespace clairfs::cli
