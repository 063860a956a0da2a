// SPDX-License-Identifier: MIT
#include "request_guard.hpp"

#include "clairfs/log.hpp"

#include <cerrno>
#include <exception>
#include <new>
#include <nlohmann/json.hpp>

namespace clairfs::fuse {
namespace {

// The errno a request gets for the exception in flight, and its text.
int classify(const char*& what) {
    try {
        throw;
    } catch (const nlohmann::json::exception& e) {
        // Input that got past validation into a JSON accessor: still the
        // caller's bad input, not the mount's failure.
        what = e.what();
        return EINVAL;
    } catch (const std::bad_alloc&) {
        what = "out of memory";
        return ENOMEM;
    } catch (const std::exception& e) {
        what = e.what();
        return EIO;
    } catch (...) {
        what = "an unknown exception";
        return EIO;
    }
}

} // namespace

void answer_failed_request(fuse_req_t req, const char* op, bool reply) {
    const char* what = "";
    int err = classify(what);
    LOG_ERROR("%s failed inside clairfs (%s); answered %s, the mount keeps serving", op, what,
              reply ? strerrorname_np(err) : "nothing");
    if (reply)
        fuse_reply_err(req, err);
    else
        fuse_reply_none(req);
}

} // namespace clairfs::fuse
