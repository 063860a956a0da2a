// SPDX-License-Identifier: MIT
#include "request_guard.hpp"

#include "clairfs/log.hpp"
#include "clairfs/sys/contained.hpp"

#include <cerrno>
#include <exception>
#include <string>
#include <new>
#include <nlohmann/json.hpp>

namespace clairfs::fuse {
namespace {

// The errno a request gets for the exception in flight.
int errno_for_exception() {
    try {
        throw;
    } catch (const nlohmann::json::exception&) {
        // Input that got past validation into a JSON accessor: still the
        // caller's bad input, not the mount's failure.
        return EINVAL;
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (...) {
        return EIO;
    }
}

} // namespace

void answer_failed_request(fuse_req_t req, const char* op, bool reply) {
    int err = errno_for_exception();
    std::string what = sys::current_exception_text();
    LOG_ERROR("%s failed inside clairfs (%s); answered %s, the mount keeps serving", op,
              what.c_str(), reply ? strerrorname_np(err) : "nothing");
    if (reply)
        fuse_reply_err(req, err);
    else
        fuse_reply_none(req);
}

} // namespace clairfs::fuse
