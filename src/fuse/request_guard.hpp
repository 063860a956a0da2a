// SPDX-License-Identifier: MIT
// The catch-all every FUSE operation runs inside. libfuse calls us from C:
// an exception leaving a callback would terminate the daemon, and with it
// every job reading the mount. A failure inside one request answers that
// request alone (EINVAL for input a parser rejected, ENOMEM, else EIO),
// logs one line, and the mount keeps serving.
//
// This relies on one rule every handler keeps: the fuse_reply_* call is the
// last thing that can fail, so a request whose handler threw has not been
// answered yet (fuse_reply_* are C and never throw).
#pragma once

#include "clairfs/fuse/filesystem.hpp"

#include <fuse_lowlevel.h>

#include <algorithm>
#include <cstddef>

namespace clairfs::fuse {

// An operation's name as a template argument, for the log line.
template <size_t N>
struct OpName {
    constexpr OpName(const char (&s)[N]) { std::copy_n(s, N, text); }
    char text[N];
};

// Logs the exception in flight and answers `req` with an errno for it;
// `reply` false for the operations that take no reply but fuse_reply_none.
// Call only from a catch block.
void answer_failed_request(fuse_req_t req, const char* op, bool reply);

// `Reply` false for forget, which takes no answer but fuse_reply_none.
template <OpName Name, auto Op, bool Reply>
struct Guarded;

template <OpName Name, typename... Args, void (*Op)(fuse_req_t, Args...), bool Reply>
struct Guarded<Name, Op, Reply> {
    static void call(fuse_req_t req, Args... args) noexcept {
        static constexpr size_t kind = request_kind(Name.text);
        if constexpr (kind < request_kinds.size()) {
            Filesystem& fs = filesystem_of(req);
            fs.counters.requests.add(kind);
            fs.transport.count(req);
        }
        try {
            Op(req, args...);
        } catch (...) {
            answer_failed_request(req, Name.text, Reply);
        }
    }
};

template <OpName Name, auto Op>
inline constexpr auto guarded = &Guarded<Name, Op, true>::call;

template <OpName Name, auto Op>
inline constexpr auto guarded_no_reply = &Guarded<Name, Op, false>::call;

} // namespace clairfs::fuse
