// SPDX-License-Identifier: MIT
#include "clairfs/control/search_budget.hpp"

#include <algorithm>

namespace clairfs::control {

SearchBudget::SearchBudget(double share, double window_s, double now_s)
    : share_(share), cap_(share * window_s), balance_(cap_), at_(now_s) {}

void SearchBudget::refill(double now_s) {
    // A clock that steps back (it should not: the caller's is monotonic)
    // adds nothing rather than taking away.
    if (now_s > at_) balance_ = std::min(cap_, balance_ + (now_s - at_) * share_);
    at_ = std::max(at_, now_s);
}

bool SearchBudget::allows(double now_s) {
    refill(now_s);
    return balance_ >= 0;
}

double SearchBudget::wait_s(double now_s) {
    refill(now_s);
    return balance_ >= 0 ? 0 : -balance_ / share_;
}

double SearchBudget::wait_until_s(double fraction, double now_s) {
    refill(now_s);
    const double want = fraction * cap_;
    return balance_ >= want ? 0 : (want - balance_) / share_;
}

void SearchBudget::spend(double cpu_s, double now_s) {
    refill(now_s);
    if (cpu_s > 0) {
        balance_ -= cpu_s;
        spent_ += cpu_s;
    }
}

} // namespace clairfs::control
