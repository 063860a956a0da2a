// SPDX-License-Identifier: MIT
#include "clairfs/config/mount_args.hpp"

#include "clairfs/config/json_keys.hpp"
#include "clairfs/config/option_registry.hpp"

#include <cstdio>

namespace clairfs::config {
namespace {

// The generic options an fstab line, a systemd mount unit or mount(8)
// itself hands a mount helper (mount.fuse3 drops a few: user, auto,
// _netdev, nofail). They do not apply: the view is read-only whatever is
// asked, control writes need the mount writable, and device, setuid and
// access-time semantics are the backing files'. x-* and comment= are
// notes for systemd and mount(8).
bool generic_mount_option(std::string_view item) {
    static constexpr std::string_view ignored[] = {
        "ro",      "rw",       "defaults",    "suid",     "nosuid",     "dev",    "nodev",
        "exec",    "noexec",   "atime",       "noatime",  "relatime",   "norelatime",
        "strictatime", "nostrictatime", "diratime", "nodiratime", "lazytime", "nolazytime",
        "sync",    "async",    "auto",        "noauto",   "user",       "nouser", "users",
        "_netdev", "nofail",   "owner",       "group",    "silent",     "loud"};
    for (std::string_view g : ignored)
        if (item == g) return true;
    return item.starts_with("x-") || item.starts_with("comment=");
}

std::string apply_list(MountOptions& out, std::string_view list) {
    while (!list.empty()) {
        size_t comma = list.find(',');
        std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (item.empty() || generic_mount_option(item)) continue;
        size_t eq = item.find('=');
        std::string why = eq == std::string_view::npos
                              ? apply_option(out, item, "true")
                              : apply_option(out, item.substr(0, eq), item.substr(eq + 1));
        if (!why.empty()) return why;
    }
    return "";
}

// Config files first, so that the command line overrides them.
std::string apply_config_files(const std::vector<std::string>& args, MountOptions& out) {
    auto set = [&](const std::string& key, const std::string& value) {
        return apply_option(out, key, value);
    };
    for (size_t i = 0; i < args.size(); ++i) {
        std::string path;
        if (args[i] == "--config" && i + 1 < args.size())
            path = args[++i];
        else if (args[i].starts_with("--config="))
            path = args[i].substr(9);
        else
            continue;
        if (auto why = apply_json_file(path, set); !why.empty()) return why;
    }
    return "";
}

// Walks the command line: options into MountOptions, the rest kept as
// operands. Splits "--name=value" / "--name value" / "-x value" into name
// and value.
struct Cursor {
    const std::vector<std::string>& args;
    size_t i = 0;
    bool options_done = false; // after "--"
    std::vector<std::string> positional{};

    // The argument at i (and its value, which moves i on): "" or why not.
    std::string take(MountArgs& out) {
        const std::string& a = args[i];
        if (options_done || a.size() < 2 || a[0] != '-') {
            positional.push_back(a);
            return "";
        }
        if (a == "--") {
            options_done = true;
        } else if (a == "--help" || a == "-h") {
            out.help = true;
        } else if (a == "--config") {
            ++i; // applied before the rest: apply_config_files()
        } else if (a.starts_with("--config=")) {
            // likewise
        } else if (a == "-o") {
            if (i + 1 >= args.size()) return "option '-o' needs a value";
            return apply_list(out.options, args[++i]);
        } else if (a.starts_with("-o")) {
            return apply_list(out.options, std::string_view(a).substr(2));
        } else if (a.starts_with("--") && a.find('=') != std::string::npos) {
            return joined_option(a, out.options);
        } else if (a.starts_with("--")) {
            return option(a, std::string_view(a).substr(2), out.options);
        } else if (a.size() == 2) {
            return option(a, std::string_view(a).substr(1), out.options);
        } else {
            return "unknown option '" + a + "'";
        }
        return "";
    }

    // "--name=value".
    std::string joined_option(const std::string& a, MountOptions& out) {
        size_t eq = a.find('=');
        const OptionSpec* spec = find_option(std::string_view(a).substr(2, eq - 2));
        return spec ? apply_option(out, spec->name, std::string_view(a).substr(eq + 1))
                    : "unknown option '" + a.substr(0, eq) + "'";
    }

    std::string option(std::string_view arg, std::string_view name, MountOptions& out) {
        const OptionSpec* spec = find_option(name);
        bool negated = false;
        if (!spec && name.starts_with("no-")) {
            spec = find_option(name.substr(3));
            negated = spec && spec->type == OptionType::flag;
            if (!negated) spec = nullptr;
        }
        if (!spec) return "unknown option '" + std::string(arg) + "'";
        if (spec->type == OptionType::flag)
            return apply_option(out, spec->name, negated ? "false" : "true");
        if (i + 1 >= args.size()) return "option '" + std::string(arg) + "' needs a value";
        return apply_option(out, spec->name, args[++i]);
    }
};

// The ways of seeing opens that rule each other out, and --opens auto's
// choice under --kernel-opens.
std::string settle_opens(MountOptions& o) {
    // Pushed pages are read without a READ, and under --kernel-opens the
    // READs are all the tracker sees.
    if (o.fast_path.push_ahead && o.fast_path.kernel_opens)
        return "--push-ahead needs the opens that --kernel-opens hides; use one of them";
    if (o.fast_path.opens == Opens::fanotify && o.fast_path.kernel_opens)
        return "--kernel-opens leaves opens unseen, --opens fanotify has fanotify see them; "
               "use one of them";
    if (o.fast_path.kernel_opens) o.fast_path.opens = Opens::fuse; // auto: not fanotify
    return "";
}

} // namespace

std::string parse_mount_args(const std::vector<std::string>& args, MountArgs& out) {
    if (auto why = apply_config_files(args, out.options); !why.empty()) return why;
    Cursor c{args};
    for (; c.i < args.size(); ++c.i)
        if (auto why = c.take(out); !why.empty()) return why;
    if (out.help) return "";
    if (c.positional.size() < 2) return "expected BACKING and MOUNTPOINT";
    if (c.positional.size() > 2) return "unexpected argument '" + c.positional[2] + "'";
    if (auto why = settle_opens(out.options); !why.empty()) return why;
    out.options.backing = c.positional[0];
    out.options.mountpoint = c.positional[1];
    return "";
}

void print_mount_help(const char* prog) {
    printf("usage: %s mount BACKING MOUNTPOINT [options]\n\n"
           "Mounts a read-only view of the directory BACKING at MOUNTPOINT (which may be\n"
           "BACKING itself). The tree is scanned once; metadata is then served from memory.\n\n"
           "options (also as -o name=value,... or keys of a JSON object in --config FILE):\n",
           prog);
    for (const auto& s : mount_option_specs()) {
        std::string flag = "--" + std::string(s.name);
        for (char& ch : flag)
            if (ch == '_') ch = '-';
        if (s.short_name) flag = std::string("-") + s.short_name + ", " + flag;
        if (!s.value_name.empty()) flag += " " + std::string(s.value_name);
        printf("  %-28s %.*s", flag.c_str(), static_cast<int>(s.help.size()), s.help.data());
        if (s.type != OptionType::flag)
            printf(" [%.*s]", static_cast<int>(s.default_text.size()), s.default_text.data());
        printf("\n");
    }
    printf("  %-28s %s\n", "--config FILE", "read options from a JSON object");
    printf("  %-28s %s\n", "-h, --help", "show this help");
}

} // namespace clairfs::config
