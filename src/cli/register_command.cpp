// SPDX-License-Identifier: MIT
// `clairfs register MOUNT ...` and `clairfs unregister MOUNT`: write the
// mount's control file for the user and turn a refusal into one line.
#include "clairfs/cli/commands.hpp"
#include "control_client.hpp"
#include "register_args.hpp"

#include <cstdio>

namespace clairfs::cli {
namespace {

int register_usage_error(const std::string& why, const char* command) {
    fprintf(stderr, "clairfs: %s (see clairfs %s --help)\n", why.c_str(), command);
    return exit_usage;
}

// root and manifest may be given as paths through the mount; the control
// file wants them relative to its root.
void make_relative(nlohmann::ordered_json& body, const std::string& abs_mount) {
    for (const char* key : {"root", "manifest"}) {
        auto it = body.find(key);
        if (it != body.end() && it->is_string())
            *it = mount_relative(it->get<std::string>(), abs_mount);
    }
    if (auto l = body.find("loaders"); l != body.end() && l->is_array())
        for (auto& loader : *l)
            if (loader.is_object()) make_relative(loader, abs_mount);
}

} // namespace

int register_command(const std::vector<std::string>& args) {
    RegisterArgs a;
    if (auto why = parse_register_args(args, a); !why.empty()) return register_usage_error(why, "register");
    if (a.help) {
        print_register_help();
        return exit_ok;
    }
    std::string abs;
    if (int rv = locate_mount(a.mount, abs); rv != exit_ok) return rv;
    make_relative(a.body, abs);
    // An empty object would unregister: a bare `clairfs register MOUNT`
    // means "all defaults", which an explicit key says.
    if (a.body.empty()) a.body["unregister"] = false;
    int rv = send_control(
        abs, a.body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
    // Which ranks `--ranks auto` chose, and why, once they are registered.
    if (rv == exit_ok && !a.note.empty()) printf("%s\n", a.note.c_str());
    return rv;
}

int unregister_command(const std::vector<std::string>& args) {
    std::string mount, job;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") {
            printf("usage: clairfs unregister MOUNT [--job ID]\n\n"
                   "Forgets the jobs registered with a mount (only job ID with --job): their\n"
                   "prefetching stops; with no job left, files are cached on first use only.\n");
            return exit_ok;
        }
        if (a == "--job" && i + 1 < args.size()) {
            job = args[++i];
            continue;
        }
        if (a.starts_with("--job=")) {
            job = a.substr(6);
            continue;
        }
        if (a.starts_with("-")) return register_usage_error("unknown option '" + a + "'", "unregister");
        if (!mount.empty()) return register_usage_error("unexpected argument '" + a + "'", "unregister");
        mount = a;
    }
    if (mount.empty()) return register_usage_error("expected MOUNT", "unregister");
    std::string abs;
    if (int rv = locate_mount(mount, abs); rv != exit_ok) return rv;
    nlohmann::ordered_json body = {{"unregister", true}};
    if (!job.empty()) body["job"] = job;
    return send_control(abs, body.dump() + "\n");
}

} // namespace clairfs::cli
