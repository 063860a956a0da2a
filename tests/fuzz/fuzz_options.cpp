// SPDX-License-Identifier: MIT
// Mount options and JSON config files: the input is a JSON config text,
// then (after a NUL byte) command-line arguments one per line, given to
// `clairfs mount`, `order` and `register` as their argument parsers see
// them. --config is left out: it names a file, which the JSON part stands for.
#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/mount_args.hpp"
#include "clairfs/config/option_registry.hpp"
#include "cli/order_args.hpp"
#include "cli/register_args.hpp"
#include "fuzz_check.hpp"

using namespace clairfs;

namespace {

std::vector<std::string> split_args(std::string_view text) {
    std::vector<std::string> args;
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string arg(text.substr(0, nl));
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        if (!arg.starts_with("--config")) args.push_back(std::move(arg));
    }
    return args;
}

void apply_config(std::string_view json) {
    config::MountOptions opts;
    std::string why =
        config::apply_json_object(json, "cfg.json", [&](const std::string& k, const std::string& v) {
            return config::apply_option(opts, k, v);
        });
    fuzz::require_one_line(why);
    cli::OrderArgs order;
    (void)config::apply_json_object(json, "", [&](const std::string& k, const std::string& v) {
        return order::set_job_key(order.spec, k, v);
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text = fuzz::as_text(data, size);
    size_t nul = text.find('\0');
    apply_config(text.substr(0, nul));
    if (nul == std::string_view::npos) return 0;
    std::vector<std::string> args = split_args(text.substr(nul + 1));
    config::MountArgs mount;
    (void)config::parse_mount_args(args, mount);
    cli::OrderArgs order;
    (void)cli::parse_order_args(args, order);
    cli::RegisterArgs reg;
    // A fixed launcher for --ranks auto: the process's own environment
    // would make a crash depend on where the fuzzer ran.
    static const cli::EnvLookup torchrun = [](const char* name) -> std::optional<std::string> {
        static const std::pair<const char*, const char*> vars[] = {
            {"RANK", "5"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}, {"WORLD_SIZE", "8"}};
        for (const auto& [k, v] : vars)
            if (std::string_view(name) == k) return std::string(v);
        return std::nullopt;
    };
    if (cli::parse_register_args(args, reg, torchrun).empty())
        (void)reg.body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return 0;
}
