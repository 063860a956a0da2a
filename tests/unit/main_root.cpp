// SPDX-License-Identifier: MIT
// The main of the unit tests that need root (they mount file systems). Where
// root is, they run, and a step that fails there fails the test loudly. Only
// without root does the binary say why and exit 77, which meson reports as a
// skip, so a machine that cannot run them shows it in the summary.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <doctest/doctest.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (::geteuid() != 0) {
        std::fprintf(stderr, "SKIP: these cases mount file systems (a loop-mounted ext4, "
                             "ramfs) and need root; run the tests as root, as CI does\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
