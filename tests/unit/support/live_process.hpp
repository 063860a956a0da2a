// SPDX-License-Identifier: MIT
// A live process of its own until destroyed: a reader, or the writer of a
// registration, that the engine sees as a real process (Engine::process_of
// reads its /proc status). Thread ids that no process has will not do: a
// job whose every process has exited is retired by the scheduler within a
// second (Engine::retire_exited), so a test that took longer than that on a
// loaded host saw its job retired mid-case (unit_control failed in CI).
//
// Each one's parent is this test process, which no test registers from:
// a job's loader process is only ever one of these.
#pragma once

#include <doctest/doctest.h>

#include <csignal>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace clairfs::test {

struct LiveProcess {
    pid_t pid = ::fork();
    LiveProcess() {
        if (pid == 0) {
            ::pause();
            ::_exit(0);
        }
        REQUIRE(pid > 0);
    }
    ~LiveProcess() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    LiveProcess(const LiveProcess&) = delete;
    LiveProcess& operator=(const LiveProcess&) = delete;
    uint32_t id() const { return static_cast<uint32_t>(pid); }
};

} // namespace clairfs::test
