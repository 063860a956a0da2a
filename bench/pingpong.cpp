// SPDX-License-Identifier: MIT
// pingpong [ROUND_TRIPS]
//
// The floor under any FUSE request on this machine: two processes passing
// one byte back and forth through pipes, as the reader and the daemon do
// through /dev/fuse. Prints the mean round trip in microseconds; run it
// under `taskset -c 0` to see the same-CPU cost.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
    long n = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 100000;
    int to_child[2], to_parent[2];
    if (n <= 0 || pipe(to_child) < 0 || pipe(to_parent) < 0) return 2;
    char byte = 0;
    pid_t pid = fork();
    if (pid == 0) {
        for (long i = 0; i < n; ++i)
            if (read(to_child[0], &byte, 1) != 1 || write(to_parent[1], &byte, 1) != 1) _exit(1);
        _exit(0);
    }
    timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (long i = 0; i < n; ++i)
        if (write(to_child[1], &byte, 1) != 1 || read(to_parent[0], &byte, 1) != 1) return 1;
    clock_gettime(CLOCK_MONOTONIC, &end);
    waitpid(pid, nullptr, 0);
    double us = ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / 1e3 / n;
    std::printf("{\"round_trips\": %ld, \"us_per_round_trip\": %.2f}\n", n, us);
    return 0;
}
