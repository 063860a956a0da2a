// SPDX-License-Identifier: MIT
#include "clairfs/index/symlink_policy.hpp"

#include <doctest/doctest.h>

using namespace clairfs::index;

TEST_CASE("lexically_normal folds ., .. and repeated slashes") {
    CHECK(lexically_normal("/a/./b//c/../d") == "/a/b/d");
    CHECK(lexically_normal("/../x") == "/x");
    CHECK(lexically_normal("../a/../../b") == "../../b");
    CHECK(lexically_normal("a/..") == ".");
    CHECK(lexically_normal("/") == "/");
}

TEST_CASE("is_within respects component boundaries") {
    CHECK(is_within("/data/set", "/data/set"));
    CHECK(is_within("/data/set/a", "/data/set"));
    CHECK_FALSE(is_within("/data/settings", "/data/set"));
    CHECK_FALSE(is_within("/data", "/data/set"));
    CHECK(is_within("/anything", "/"));
}

TEST_CASE("relative_to climbs to the common prefix") {
    CHECK(relative_to("/r/a/x.jpg", "/r/b/c") == "../../a/x.jpg");
    CHECK(relative_to("/r/a", "/r") == "a");
    CHECK(relative_to("/r", "/r/a/b") == "../..");
    CHECK(relative_to("/r", "/r") == ".");
}

TEST_CASE("resolved links are shown only when they stay inside the root") {
    SymlinkFacts f{"/r", "/r/cls", "../other/x.jpg", std::string("/r/other/x.jpg")};
    CHECK(confine_symlink(f) == std::optional<std::string>("../other/x.jpg"));

    f.target = "/etc/passwd";
    f.resolved = "/etc/passwd";
    CHECK_FALSE(confine_symlink(f));

    f.target = "../../../etc";
    f.resolved = "/etc";
    CHECK_FALSE(confine_symlink(f));

    f.target = "/r/other/x.jpg"; // absolute but inside: rewritten to stay in the mount
    f.resolved = "/r/other/x.jpg";
    CHECK(confine_symlink(f) == std::optional<std::string>("../other/x.jpg"));

    f.target = "/alias/other/x.jpg"; // absolute through an alias of the root
    f.resolved = "/r/other/x.jpg";
    CHECK(confine_symlink(f) == std::optional<std::string>("../other/x.jpg"));
}

TEST_CASE("a relative link that leaves the root and re-enters by its name is rewritten") {
    // /r/cls/x.jpg -> ../../r/other/y.jpg resolves inside /r on disk, but in
    // a mount at another path it would climb out of the mount.
    SymlinkFacts f{"/r", "/r/cls", "../../r/other/y.jpg", std::string("/r/other/y.jpg")};
    CHECK(confine_symlink(f) == std::optional<std::string>("../other/y.jpg"));
    f.target = "../other/./y.jpg"; // stays inside: kept as written
    CHECK(confine_symlink(f) == std::optional<std::string>("../other/./y.jpg"));
    SymlinkFacts at_root{"/r", "/r", "../r/a", std::string("/r/a")};
    CHECK(confine_symlink(at_root) == std::optional<std::string>("a"));
}

TEST_CASE("dangling links are judged by their text") {
    SymlinkFacts f{"/r", "/r/cls", "missing.jpg", std::nullopt};
    CHECK(confine_symlink(f) == std::optional<std::string>("missing.jpg"));
    f.target = "../../outside";
    CHECK_FALSE(confine_symlink(f));
    f.target = "/r/gone";
    CHECK(confine_symlink(f) == std::optional<std::string>("../gone"));
    f.target = "/elsewhere/gone";
    CHECK_FALSE(confine_symlink(f));
}
