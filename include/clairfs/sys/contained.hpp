// SPDX-License-Identifier: MIT
// One unit of a thread's work, with its failure contained. An exception
// leaving a std::thread's entry terminates the process, and with it the
// mount: every background thread runs its work through this, so a failure
// costs that unit (a fetch, a scheduler round, a stage pass) and is said in
// one log line, while the thread and the mount live on.
#pragma once

#include "clairfs/log.hpp"

#include <exception>
#include <new>
#include <string>

namespace clairfs::sys {

// The message of the exception in flight; call only from a catch block.
inline std::string current_exception_text() {
    try {
        throw;
    } catch (const std::bad_alloc&) {
        return "out of memory";
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "an unknown exception";
    }
}

// Runs `work`; on an exception logs "`where` failed: why" and returns the
// reason, else "".
template <class Work>
std::string contained(const char* where, Work&& work) noexcept {
    try {
        work();
        return "";
    } catch (...) {
        std::string why = current_exception_text();
        LOG_ERROR("%s failed inside clairfs: %s", where, why.c_str());
        return why;
    }
}

} // namespace clairfs::sys
