// SPDX-License-Identifier: MIT
// The catch-all around every FUSE operation. libfuse's reply functions are
// replaced here, at link time, by ones that record the answer, so the guard
// runs exactly as in the daemon without a kernel.
#include "fuse/request_guard.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace {

int g_replied_errno = -1;
int g_replies = 0;
bool g_replied_none = false;

void reset() {
    g_replied_errno = -1;
    g_replies = 0;
    g_replied_none = false;
}

fuse_req_t fake_req() {
    static char dummy;
    return reinterpret_cast<fuse_req_t>(&dummy);
}

void throws_json(fuse_req_t, int) {
    auto j = nlohmann::json::parse(R"({"seed": 1e999})");
    (void)j;
}
void throws_runtime(fuse_req_t, int) {
    throw std::runtime_error("a broken invariant");
}
void throws_bad_alloc(fuse_req_t, int) {
    throw std::bad_alloc();
}
void throws_int(fuse_req_t, int) {
    throw 42;
}
void answers(fuse_req_t req, int err) {
    fuse_reply_err(req, err);
}
void forget_throws(fuse_req_t, uint64_t) {
    throw std::runtime_error("forget failed");
}

} // namespace

extern "C" int fuse_reply_err(fuse_req_t, int err) {
    g_replied_errno = err;
    ++g_replies;
    return 0;
}

extern "C" void fuse_reply_none(fuse_req_t) {
    g_replied_none = true;
    ++g_replies;
}

using clairfs::fuse::guarded;
using clairfs::fuse::guarded_no_reply;

TEST_CASE("an exception in a FUSE operation answers that request once, with its errno") {
    struct Case {
        void (*op)(fuse_req_t, int);
        int expected;
    };
    const Case cases[] = {
        {guarded<"json", throws_json>, EINVAL},
        {guarded<"runtime", throws_runtime>, EIO},
        {guarded<"alloc", throws_bad_alloc>, ENOMEM},
        {guarded<"int", throws_int>, EIO},
    };
    for (const Case& c : cases) {
        reset();
        c.op(fake_req(), 0); // must not throw, must not terminate
        CHECK(g_replies == 1);
        CHECK(g_replied_errno == c.expected);
    }
}

TEST_CASE("an operation that answers itself is answered once") {
    reset();
    guarded<"answers", answers>(fake_req(), ENOENT);
    CHECK(g_replies == 1);
    CHECK(g_replied_errno == ENOENT);
}

TEST_CASE("a forget that throws still sends its reply_none") {
    reset();
    guarded_no_reply<"a_forget", forget_throws>(fake_req(), 1);
    CHECK(g_replies == 1);
    CHECK(g_replied_none);
}
