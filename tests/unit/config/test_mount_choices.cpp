// SPDX-License-Identifier: MIT
// The choice options (mount_choices.hpp): status and logs show a value by
// its name function, users write it back as an option, so each name must
// parse, through the registry, to the value it names; and the words the
// options refused before they were enums are still refused, with the same
// message.
#include "clairfs/config/mount_choices.hpp"
#include "clairfs/config/option_registry.hpp"

#include <doctest/doctest.h>
#include <initializer_list>
#include <string>

using namespace clairfs::config;

namespace {

// Each enumerator is listed here by hand: one missing from its words table
// would name itself "?", which no option accepts.
// Every choice sits in one of MountOptions' groups: `group`, then `field`.
template <typename G, typename E>
void check_names_parse_back(const char* option, G MountOptions::*group, E G::*field,
                            const char* (*name)(E), std::initializer_list<E> all) {
    for (E want : all) {
        CAPTURE(option);
        CAPTURE(name(want));
        MountOptions o;
        for (E other : all) // start from another value, so a no-op cannot pass
            if (other != want) o.*group.*field = other;
        CHECK(apply_option(o, option, name(want)) == "");
        CHECK(o.*group.*field == want);
    }
}

template <typename G, typename E>
void check_refuses(const char* option, G MountOptions::*group, E G::*field, const char* expected,
                   std::initializer_list<const char*> words) {
    for (const char* word : words) {
        CAPTURE(option);
        CAPTURE(word);
        MountOptions o;
        const E before = o.*group.*field;
        CHECK(apply_option(o, option, word) ==
              "invalid value for " + std::string(option) + ": " + word + " (" + expected + ")");
        CHECK(o.*group.*field == before);
    }
}

} // namespace

TEST_CASE("every choice's name parses back to it") {
    constexpr auto fast = &MountOptions::fast_path;
    check_names_parse_back("opens", fast, &FastPath::opens, opens_name,
                           {Opens::fuse, Opens::fanotify, Opens::auto_});
    check_names_parse_back("peers", &MountOptions::peers, &PeerOptions::mode, peers_name,
                           {Peers::none, Peers::mpi});
    check_names_parse_back("one_copy", fast, &FastPath::one_copy, when_name,
                           {When::never, When::automatic, When::always});
    check_names_parse_back("drop_behind", fast, &FastPath::drop_behind, when_name,
                           {When::never, When::automatic, When::always});
    check_names_parse_back("io_uring", fast, &FastPath::io_uring, io_uring_name,
                           {IoUring::auto_, IoUring::on, IoUring::off});
    check_names_parse_back("ring_sched", fast, &FastPath::ring_sched, ring_sched_name,
                           {RingSched::idle, RingSched::normal});
}

TEST_CASE("the names are the words the options always took") {
    CHECK(std::string(opens_name(Opens::fuse)) == "fuse");
    CHECK(std::string(opens_name(Opens::fanotify)) == "fanotify");
    CHECK(std::string(opens_name(Opens::auto_)) == "auto");
    CHECK(std::string(peers_name(Peers::none)) == "none");
    CHECK(std::string(peers_name(Peers::mpi)) == "mpi");
    CHECK(std::string(when_name(When::never)) == "never");
    CHECK(std::string(when_name(When::automatic)) == "auto");
    CHECK(std::string(when_name(When::always)) == "always");
    CHECK(std::string(io_uring_name(IoUring::on)) == "on");
    CHECK(std::string(io_uring_name(IoUring::off)) == "off");
}

TEST_CASE("a word no choice has is refused, with the message it always had") {
    constexpr auto fast = &MountOptions::fast_path;
    check_refuses("opens", fast, &FastPath::opens, "expected auto, fanotify or fuse",
                  {"", "inotify", "Fuse", "fuse ", "none", "?"});
    check_refuses("peers", &MountOptions::peers, &PeerOptions::mode,
                  "expected mpi (the daemons of one MPI launch form the group) or none",
                  {"", "MPI", "slurm", "auto", "?"});
    for (const char* option : {"one_copy", "drop_behind"})
        check_refuses(option, fast,
                      std::string(option) == "one_copy" ? &FastPath::one_copy
                                                        : &FastPath::drop_behind,
                      "expected auto, always or never",
                      {"", "automatic", "Always", "on", "true", "?"});
    check_refuses("io_uring", fast, &FastPath::io_uring, "expected auto, on or off",
                  {"", "yes", "ON", "never", "?"});
}

TEST_CASE("--no-one-copy is --one-copy never, and false puts auto back") {
    MountOptions o;
    CHECK(o.fast_path.one_copy == When::automatic);
    REQUIRE(apply_option(o, "no_one_copy", "true") == "");
    CHECK(o.fast_path.one_copy == When::never);
    REQUIRE(apply_option(o, "no_one_copy", "false") == "");
    CHECK(o.fast_path.one_copy == When::automatic);
}
