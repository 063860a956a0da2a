// SPDX-License-Identifier: MIT
// How writes to .clairfs/control become registrations: whole documents
// at once, pieces once complete, the rest at close.
#include "clairfs/control/pending_write.hpp"

#include <cerrno>
#include <doctest/doctest.h>
#include <string>
#include <vector>

using namespace clairfs::control;

namespace {

struct Sink {
    std::vector<std::string> applied;
    std::vector<std::string> refused;
    PendingWrite open(bool append = false) {
        return PendingWrite(
            [this](std::string_view t) {
                applied.emplace_back(t);
                return t.find("bad") == std::string_view::npos ? 0 : -EINVAL;
            },
            [this](const std::string& why) {
                refused.push_back(why);
                return -EINVAL;
            },
            append);
    }
};

} // namespace

TEST_CASE("json_progress tells a document cut short from one that is wrong") {
    CHECK(json_progress("") == JsonProgress::blank);
    CHECK(json_progress(" \n\t") == JsonProgress::blank);
    CHECK(json_progress("{}") == JsonProgress::complete);
    CHECK(json_progress("{\"a\": 1}\n") == JsonProgress::complete);
    CHECK(json_progress("[1]") == JsonProgress::complete);
    CHECK(json_progress("{") == JsonProgress::incomplete);
    CHECK(json_progress("{\"a\": tr") == JsonProgress::incomplete);
    CHECK(json_progress("{\"a\": \"abc") == JsonProgress::incomplete);
    CHECK(json_progress("{\"a\": 1,") == JsonProgress::incomplete);
    CHECK(json_progress("{\"a\": x") == JsonProgress::invalid);
    CHECK(json_progress("{}{}") == JsonProgress::invalid);
    CHECK(json_progress("seed=1") == JsonProgress::invalid);
}

TEST_CASE("a whole document in one write is applied by that write") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("{\"seed\": 1}\n", 0) == 0);
    CHECK(s.applied == std::vector<std::string>{"{\"seed\": 1}\n"});
    CHECK(w.flush() == 0); // nothing left
    CHECK(s.applied.size() == 1);
}

TEST_CASE("pieces are applied once they complete a document") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("{\"seed\": ", 0) == 0);
    CHECK(s.applied.empty());
    CHECK(w.write("1}", 9) == 0);
    CHECK(s.applied == std::vector<std::string>{"{\"seed\": 1}"});
    CHECK(w.write("\n", 11) == 0); // trailing whitespace is nothing new
    CHECK(w.flush() == 0);
    CHECK(s.applied.size() == 1);
}

TEST_CASE("a refused document fails the write that completed it, and only it") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("{\"bad\": 1}", 0) == -EINVAL);
    CHECK(w.flush() == 0);
    CHECK(s.applied.size() == 1);
}

TEST_CASE("invalid JSON fails the write at once") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("seed=1 bad", 0) == -EINVAL);
    CHECK(s.applied.size() == 1);
    CHECK(w.flush() == 0);
}

TEST_CASE("a document cut short is applied (and refused) at close") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("{\"bad\": ", 0) == 0);
    CHECK(s.applied.empty());
    CHECK(w.flush() == -EINVAL);
    CHECK(s.applied == std::vector<std::string>{"{\"bad\": "});
    CHECK(w.flush() == 0); // a second close (a dup'd descriptor) has nothing left
}

TEST_CASE("writing from offset 0 again starts a new registration") {
    Sink s;
    PendingWrite w = s.open();
    CHECK(w.write("{\"seed\": 1}", 0) == 0);
    CHECK(w.write("{\"seed\": 2}", 0) == 0);
    CHECK(s.applied == std::vector<std::string>{"{\"seed\": 1}", "{\"seed\": 2}"});
    CHECK(w.write("{}", 5) == -EINVAL); // inside what was applied
    CHECK(s.refused.size() == 1);
}

TEST_CASE("O_APPEND opens append whatever the offset") {
    Sink s;
    PendingWrite w = s.open(true);
    CHECK(w.write("{\"seed\"", 0) == 0);
    CHECK(w.write(": 1}", 0) == 0);
    CHECK(s.applied == std::vector<std::string>{"{\"seed\": 1}"});
}

TEST_CASE("an oversized registration is refused") {
    Sink s;
    PendingWrite w = s.open();
    std::string big(PendingWrite::max_bytes, ' ');
    CHECK(w.write("{", 0) == 0);
    CHECK(w.write(big, 1) == -EINVAL);
    CHECK(s.refused.size() == 1);
}
