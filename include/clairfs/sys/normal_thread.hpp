// SPDX-License-Identifier: MIT
// Starting a thread at the normal scheduling policy from a thread that may
// not have it. libfuse's io_uring ring threads run at SCHED_IDLE
// (--ring-sched, fuse/transport.cpp), and a new thread inherits its
// creator's policy: a planner, a notifier or a bounded read's worker first
// needed inside an OPEN or a READ would run at SCHED_IDLE for the mount's
// life, starved whenever the job's loaders keep every CPU busy. Nor can
// such a thread take the normal policy back without CAP_SYS_NICE. So a
// caller at SCHED_IDLE hands the start to a starter thread that has the
// normal policy, started before the ring threads exist.
#pragma once

#include <functional>
#include <thread>

namespace clairfs::sys {

// Starts the starter thread, at the caller's policy: call it once, from a
// thread at the normal policy, before any thread takes SCHED_IDLE (the
// daemon does, before its session loop). Idempotent; it runs until exit.
void start_thread_starter();

// A new thread running `body`, at the normal policy even when the caller
// is at SCHED_IDLE (then the starter creates it: without a starter it
// inherits SCHED_IDLE, as std::thread would). Throws what std::thread's
// constructor throws.
std::thread normal_thread(std::function<void()> body);

} // namespace clairfs::sys
