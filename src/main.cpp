// SPDX-License-Identifier: MIT
#include "clairfs/cli/commands.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

namespace {

void usage(FILE* out) {
    fprintf(
        out,
        "usage: clairfs COMMAND [ARGS]\n\n"
        "commands:\n"
        "  mount BACKING MOUNTPOINT [options]   serve a read-only view of a dataset\n"
        "  umount MOUNTPOINT [--lazy]           unmount it\n"
        "  register MOUNT [--KEY VALUE ...]     tell a mount the job's sampler, so it prefetches\n"
        "  unregister MOUNT                     forget the registered job\n"
        "  stage MOUNT [--wait]                 copy the whole dataset into the tiers, in the "
        "background\n"
        "  status MOUNT [--watch [S]]           what a mount is doing (--watch: like top)\n"
        "  wait MOUNT [--timeout S]             until the mount answers and its peers have joined\n"
        "  order [--KEY VALUE ...]              print the order a PyTorch job reads samples in\n"
        "  simulate --config FILE               predict what clairfs does on a cluster\n"
        "  ranges KIND SOURCE [--out FILE]      write the ranges manifest of an LMDB, an HDF5\n"
        "                                       dataset or a packed file\n\n"
        "clairfs BACKING MOUNTPOINT -o OPTIONS, as mount -t fuse.clairfs and fstab run it,\n"
        "is clairfs mount.\n"
        "clairfs COMMAND --help shows a command's options; man clairfs has the details.\n");
}

} // namespace

namespace {

int run(int argc, char** argv) {
    using namespace clairfs::cli;
    if (argc < 2) {
        usage(stderr);
        return exit_usage;
    }
    std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd == "mount") return mount_command(args);
    if (cmd == "umount" || cmd == "unmount") return umount_command(args);
    if (cmd == "order") return order_command(args);
    if (cmd == "register") return register_command(args);
    if (cmd == "unregister") return unregister_command(args);
    if (cmd == "stage") return stage_command(args);
    if (cmd == "status") return status_command(args);
    if (cmd == "wait") return wait_command(args);
    if (cmd == "simulate") return simulate_command(args);
    if (cmd == "ranges") return ranges_command(args);
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        usage(stdout);
        return exit_ok;
    }
    if (cmd == "--version" || cmd == "-V") {
        printf("clairfs %s\n", CLAIRFS_VERSION);
        return exit_ok;
    }
    // The mount helper's convention: `mount -t fuse.clairfs BACKING MNT -o
    // ...`, an fstab line or a systemd mount unit run /sbin/mount.fuse.clairfs
    // (a link to clairfs), or mount.fuse3 runs `clairfs BACKING MNT -o ...`.
    // Called so, or with a first argument that is a path (no command has a
    // slash) or a directory, it is `clairfs mount`, whose errors then say
    // what is wrong with the mount; anything else stays an unknown command.
    std::string_view self = argv[0];
    self = self.substr(self.rfind('/') + 1);
    struct stat st;
    if (argc >= 3 && cmd[0] != '-' &&
        (self.starts_with("mount.fuse") || cmd.find('/') != std::string::npos ||
         (::stat(cmd.c_str(), &st) == 0 && S_ISDIR(st.st_mode))))
        return mount_command(std::vector<std::string>(argv + 1, argv + argc));
    fprintf(stderr, "clairfs: unknown command '%s'\n", cmd.c_str());
    usage(stderr);
    return exit_usage;
}

} // namespace

// The last line of defence, for the commands' own threads: one line and a
// failure status instead of std::terminate's abort and core dump.
int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        fprintf(stderr, "clairfs: internal error: %s\n", e.what());
    } catch (...) {
        fprintf(stderr, "clairfs: internal error\n");
    }
    return clairfs::cli::exit_failure;
}
