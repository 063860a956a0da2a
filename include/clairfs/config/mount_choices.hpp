// SPDX-License-Identifier: MIT
// The mount options that take one word of a few, each an enum with its
// words beside it (choice_words.hpp). The engine takes When as it is, so
// this header stays free of the rest of MountOptions.
#pragma once

#include "clairfs/config/choice_words.hpp"

#include <cstdint>

namespace clairfs::config {

// --opens: how the daemon sees opens: fuse (an OPEN round trip each),
// fanotify (the kernel opens, fanotify tells; needs CAP_SYS_ADMIN), auto
// (fanotify where the daemon may, else fuse; settled at mount).
enum class Opens : uint8_t { fuse, fanotify, auto_ };

inline constexpr Choice<Opens> opens_words[] = {
    {Opens::auto_, "auto"}, {Opens::fanotify, "fanotify"}, {Opens::fuse, "fuse"}};

constexpr const char* opens_name(Opens o) {
    return word_of(opens_words, o);
}

// --peers: none, or mpi (form a group with the daemons of this MPI launch).
enum class Peers : uint8_t { none, mpi };

inline constexpr Choice<Peers> peers_words[] = {{Peers::mpi, "mpi"}, {Peers::none, "none"}};

constexpr const char* peers_name(Peers p) {
    return word_of(peers_words, p);
}

// --one-copy and --drop-behind (prefetch::EngineOptions says what each
// does): never, always, or automatic, while the page cache lacks the room.
enum class When : uint8_t { never, automatic, always };

inline constexpr Choice<When> when_words[] = {
    {When::automatic, "auto"}, {When::always, "always"}, {When::never, "never"}};

constexpr const char* when_name(When w) {
    return word_of(when_words, w);
}

// --io-uring: whether the kernel's requests come over FUSE's io_uring
// rings (libfuse 3.18 with liburing, and the kernel's enable_uring switch
// on) or are read from /dev/fuse. auto takes io_uring where both allow it;
// on fails the mount where they do not; off keeps /dev/fuse.
enum class IoUring { auto_, on, off };

inline constexpr Choice<IoUring> io_uring_words[] = {
    {IoUring::auto_, "auto"}, {IoUring::on, "on"}, {IoUring::off, "off"}};

constexpr const char* io_uring_name(IoUring m) {
    return word_of(io_uring_words, m);
}

// --ring-sched: the scheduling policy of libfuse's io_uring ring threads.
// idle (SCHED_IDLE) lets the kernel wake a reader on the CPU whose ring
// answered it instead of on an idle one (fuse/transport.cpp says why);
// normal leaves them as every other thread.
enum class RingSched : uint8_t { idle, normal };

inline constexpr Choice<RingSched> ring_sched_words[] = {
    {RingSched::idle, "idle"}, {RingSched::normal, "normal"}};

constexpr const char* ring_sched_name(RingSched r) {
    return word_of(ring_sched_words, r);
}

// --ssd-check: when the kernel may read an SSD entry's file itself
// (passthrough). resident: only while every page the daemon's check of it
// read is still in the page cache, so no byte the device returns later is
// served unchecked. once: from its first check in the mount (its write, or
// after a remount its first read-back) while its file is unchanged, the
// device trusted as a local copy on it would be.
enum class SsdCheck : uint8_t { resident, once };

inline constexpr Choice<SsdCheck> ssd_check_words[] = {
    {SsdCheck::resident, "resident"}, {SsdCheck::once, "once"}};

constexpr const char* ssd_check_name(SsdCheck c) {
    return word_of(ssd_check_words, c);
}

} // namespace clairfs::config
