// SPDX-License-Identifier: MIT
// Job detection's CPU, held to a share of one core. A search that finds no
// job tries every candidate, up to a second of CPU (bench/RESULTS.md, "Job
// detection"), and a reader that is not a torch loader but starts a new
// process per pass (a script run in a loop, a tool per directory) asks for
// one per process. Unbounded, that took 0.1 ms of daemon CPU per file from
// such readers on a 2-core node. Searches are paid from an account that
// fills at `share` seconds of CPU per second, up to `share` x `window`
// seconds: a search may start while the account is not overdrawn, and its
// CPU is taken from it when it ends. The first search is always allowed,
// and one that overdraws the account delays the next until it is paid back.
#pragma once

namespace clairfs::control {

class SearchBudget {
public:
    // share: of one core, in (0, 1]; window: seconds the account can save up.
    SearchBudget(double share, double window_s, double now_s);

    // Whether a search may start at time `now_s` (a monotonic clock, seconds).
    bool allows(double now_s);
    // Seconds until one may (0 if it may now).
    double wait_s(double now_s);
    // Seconds until the account holds `fraction` of what it can hold (0 if
    // it does now): background work that must leave room for searches.
    double wait_until_s(double fraction, double now_s);
    // A search ended having used `cpu_s` seconds of CPU.
    void spend(double cpu_s, double now_s);

    double share() const { return share_; }
    double spent_s() const { return spent_; }

private:
    void refill(double now_s);

    double share_;
    double cap_;      // share x window
    double balance_;  // seconds of CPU a search may still use; starts full
    double at_;       // when balance_ was last brought up to date
    double spent_ = 0; // all searches' CPU since the mount
};

} // namespace clairfs::control
