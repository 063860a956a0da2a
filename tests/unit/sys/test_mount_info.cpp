// SPDX-License-Identifier: MIT
// sys::parse_mount_line: a mountinfo line's device, mount point, type and
// source, with the kernel's \ooo escapes undone; lines that are not one
// are refused. find_mount: this process's root is a mount.
#include "clairfs/sys/mount_info.hpp"

#include <doctest/doctest.h>

using namespace clairfs;

TEST_CASE("parse_mount_line: a FUSE mount with optional fields and escaped names") {
    auto e = sys::parse_mount_line("301 29 0:40 / /tmp/a\\040b rw,nosuid shared:170 master:1 - "
                                   "fuse.clairfs clairfs:/data\\134x rw,user_id=0");
    REQUIRE(e);
    CHECK(e->device == "0:40");
    CHECK(e->mountpoint == "/tmp/a b");
    CHECK(e->fstype == "fuse.clairfs");
    CHECK(e->source == "clairfs:/data\\x");

    auto plain = sys::parse_mount_line("22 1 8:1 / / rw - ext4 /dev/sda1 rw");
    REQUIRE(plain);
    CHECK(plain->device == "8:1");
    CHECK(plain->mountpoint == "/");
    CHECK(plain->fstype == "ext4");
}

TEST_CASE("parse_mount_line: not a mountinfo line") {
    CHECK_FALSE(sys::parse_mount_line(""));
    CHECK_FALSE(sys::parse_mount_line("22 1 8:1 / / rw ext4 /dev/sda1 rw")); // no separator
    CHECK_FALSE(sys::parse_mount_line("22 1 8:1 / / rw -"));                 // no type
    // A backslash not followed by three octal digits stays as it is.
    auto e = sys::parse_mount_line("5 1 0:9 / /x\\9z rw - tmpfs t rw");
    REQUIRE(e);
    CHECK(e->mountpoint == "/x\\9z");
}

TEST_CASE("find_mount: the root is mounted, a made-up type is not") {
    auto table = sys::mount_table();
    REQUIRE_FALSE(table.empty());
    bool root = false;
    for (const auto& m : table) root = root || m.mountpoint == "/";
    CHECK(root);
    CHECK_FALSE(sys::find_mount("/", "no-such-fs-type"));
}
