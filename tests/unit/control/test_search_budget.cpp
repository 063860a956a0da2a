// SPDX-License-Identifier: MIT
#include "clairfs/control/search_budget.hpp"

#include <doctest/doctest.h>

using clairfs::control::SearchBudget;

TEST_CASE("the first search is allowed however small the share") {
    SearchBudget b(0.0001, 100, 50.0);
    CHECK(b.allows(50.0));
    CHECK(b.wait_s(50.0) == 0);
}

TEST_CASE("a search that overdraws the account delays the next until it is paid back") {
    // 2% of one core over 100 s: 2 s saved up at the start.
    SearchBudget b(0.02, 100, 0.0);
    b.spend(1.5, 1.0);
    CHECK(b.allows(1.0)); // 0.5 s left
    b.spend(1.5, 2.0);    // 1.0 s overdrawn (and 0.02 s earned meanwhile)
    CHECK_FALSE(b.allows(2.0));
    CHECK(b.wait_s(2.0) == doctest::Approx(0.98 / 0.02));
    CHECK_FALSE(b.allows(40.0));
    CHECK(b.allows(2.0 + 0.98 / 0.02 + 0.01));
    CHECK(b.spent_s() == doctest::Approx(3.0));
}

TEST_CASE("an idle mount saves up no more than share x window") {
    SearchBudget b(0.02, 100, 0.0);
    // Ten hours idle: still 2 s, so a burst of failed searches is bounded.
    b.spend(2.5, 36000.0);
    CHECK_FALSE(b.allows(36000.0));
    CHECK(b.wait_s(36000.0) == doctest::Approx(0.5 / 0.02));
}

TEST_CASE("a clock that steps back takes nothing away and adds nothing") {
    SearchBudget b(0.5, 10, 100.0);
    b.spend(6.0, 100.0); // 5 s saved up, 1 s overdrawn
    CHECK_FALSE(b.allows(90.0));
    CHECK(b.wait_s(90.0) == doctest::Approx(2.0));
    CHECK(b.allows(102.0));
}

TEST_CASE("nothing spent, nothing taken") {
    SearchBudget b(0.01, 100, 0.0);
    b.spend(0, 1.0);
    b.spend(-3, 1.0);
    CHECK(b.spent_s() == 0);
    CHECK(b.allows(1.0));
}

TEST_CASE("background work waits for half the account, leaving the rest to searches") {
    SearchBudget b(0.02, 100, 0.0); // 2 s
    CHECK(b.wait_until_s(0.5, 0.0) == 0);
    b.spend(1.5, 0.0); // 0.5 s left: below half
    CHECK(b.wait_until_s(0.5, 0.0) == doctest::Approx(0.5 / 0.02));
    CHECK(b.allows(0.0)); // a search may still start
    CHECK(b.wait_until_s(0.5, 25.0) == doctest::Approx(0));
}
