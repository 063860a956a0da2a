// SPDX-License-Identifier: MIT
#include "order_args.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/value_parsers.hpp"

namespace clairfs::cli {
namespace {

std::string set_key(OrderArgs& a, std::string key, const std::string& value) {
    key = config::canonical_key(key);
    if (key == "n") {
        uint64_t n;
        if (!config::parse_count(value, n)) return "invalid value for n: " + value;
        a.n = n;
    } else if (key == "root") {
        a.root = value;
    } else if (key == "layout") {
        a.layout = value;
    } else if (key == "manifest") {
        a.manifest = value;
    } else if (key == "worker") {
        uint64_t w;
        if (!config::parse_count(value, w) || w > UINT32_MAX)
            return "invalid value for worker: " + value;
        a.worker = static_cast<uint32_t>(w);
    } else if (key == "iterator_step") {
        uint64_t s;
        if (!config::parse_count(value, s) || s == 0 || s > UINT32_MAX)
            return "invalid value for iterator_step: " + value;
        a.iterator_step = s;
    } else if (key == "paths") {
        if (!config::parse_bool(value, a.paths)) return "invalid value for paths: " + value;
    } else if (key == "binary") {
        if (!config::parse_bool(value, a.binary)) return "invalid value for binary: " + value;
    } else {
        return order::set_job_key(a.spec, key, value);
    }
    return "";
}

bool is_flag(const std::string& s) {
    return s.size() > 2 && s.starts_with("--");
}

} // namespace

std::string parse_order_args(const std::vector<std::string>& args, OrderArgs& out) {
    for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == "--config")
            if (auto why = config::apply_json_file(
                    args[i + 1],
                    [&](const std::string& k, const std::string& v) { return set_key(out, k, v); },
                    "none");
                !why.empty())
                return why;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            out.help = true;
            continue;
        }
        if (!is_flag(a)) return "unexpected argument '" + a + "'";
        std::string key = a.substr(2), value;
        if (size_t eq = key.find('='); eq != std::string::npos) {
            value = key.substr(eq + 1);
            key.resize(eq);
        } else if (i + 1 < args.size() && !is_flag(args[i + 1])) {
            value = args[++i];
        } else {
            value = "true"; // a bare boolean flag; other keys reject it by name
        }
        if (key == "config") continue;
        if (auto why = set_key(out, key, value); !why.empty()) return why;
    }
    if (out.help) return "";
    if (out.n && !out.root.empty()) return "give either --n or --root, not both";
    if (!out.n && out.root.empty()) return "expected --n N or --root DIR";
    if (out.binary && out.paths) return "--binary writes indices; it cannot go with --paths";
    if (out.iterator_step != 1 && out.spec.framework != order::Framework::tensorflow)
        return "iterator_step needs framework tensorflow";
    if (out.worker && *out.worker >= out.spec.num_workers)
        return "worker " + std::to_string(*out.worker) + " is not below num_workers " +
               std::to_string(out.spec.num_workers);
    return "";
}

} // namespace clairfs::cli
