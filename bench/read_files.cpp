// SPDX-License-Identifier: MIT
// read_files LISTFILE [--passes N]
//
// Reads every file named in LISTFILE (one path a line) the way a simple data
// loader does: open(O_RDONLY), read() the whole file in 1 MiB calls into one
// buffer, close. Each pass over the list is timed with CLOCK_MONOTONIC and
// reported as one JSON object a line on stdout:
//   {"pass": 1, "files": N, "bytes": B, "seconds": S, "us_per_file": U, "MB_per_s": M}
// (MB = 10^6 bytes). Any failure prints a message on stderr and exits 1;
// bad usage exits 2. Only the standard library and POSIX calls are used.

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace {

constexpr size_t chunk = size_t{1} << 20; // bytes asked of each read()

[[noreturn]] void die(const std::string& what, int err) {
    std::fprintf(stderr, "read_files: %s: %s\n", what.c_str(), std::strerror(err));
    std::exit(1);
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "read_files: %s\nusage: read_files LISTFILE [--passes N]\n", why);
    std::exit(2);
}

double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> read_list(const char* listfile) {
    std::ifstream in(listfile);
    if (!in) die(std::string("cannot open list ") + listfile, errno ? errno : ENOENT);
    std::vector<std::string> paths;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) paths.push_back(std::move(line));
    }
    if (in.bad()) die(std::string("reading list ") + listfile, EIO);
    return paths;
}

// One buffer for the whole run; it grows (in whole chunks) to the largest
// file seen, so after the first file of that size a pass never allocates.
struct Buffer {
    std::unique_ptr<char[]> data;
    size_t capacity = 0;

    void ensure(size_t size) {
        if (size <= capacity) return;
        size_t grown = std::max(size, capacity * 2);
        auto bigger = std::make_unique_for_overwrite<char[]>(grown);
        if (capacity) std::memcpy(bigger.get(), data.get(), capacity);
        data = std::move(bigger);
        capacity = grown;
    }
};

// Returns the number of bytes the file held.
size_t read_whole(const std::string& path, Buffer& buf) {
    int fd;
    do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) die("open " + path, errno);
    size_t total = 0;
    for (;;) {
        buf.ensure(total + chunk);
        ssize_t n = ::read(fd, buf.data.get() + total, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            ::close(fd);
            die("read " + path, err);
        }
        if (n == 0) break;
        total += static_cast<size_t>(n);
    }
    if (::close(fd) < 0) die("close " + path, errno);
    return total;
}

} // namespace

int main(int argc, char** argv) {
    const char* listfile = nullptr;
    long passes = 1;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--passes" || arg.starts_with("--passes=")) {
            std::string_view value;
            if (arg == "--passes") {
                if (++i >= argc) usage("--passes needs a value");
                value = argv[i];
            } else {
                value = arg.substr(std::strlen("--passes="));
            }
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), passes);
            if (ec != std::errc{} || end != value.data() + value.size() || passes < 1)
                usage("--passes wants a positive integer");
        } else if (arg == "-h" || arg == "--help") {
            std::printf("usage: read_files LISTFILE [--passes N]\n");
            return 0;
        } else if (!arg.empty() && arg[0] == '-') {
            usage("unknown option");
        } else if (!listfile) {
            listfile = argv[i];
        } else {
            usage("only one LISTFILE");
        }
    }
    if (!listfile) usage("no LISTFILE");

    std::vector<std::string> paths = read_list(listfile);
    if (paths.empty()) {
        std::fprintf(stderr, "read_files: %s lists no files\n", listfile);
        return 1;
    }

    Buffer buf;
    buf.ensure(chunk);
    for (long pass = 1; pass <= passes; ++pass) {
        unsigned long long bytes = 0;
        double start = now();
        for (const auto& p : paths) bytes += read_whole(p, buf);
        double seconds = now() - start;
        double files = static_cast<double>(paths.size());
        std::printf("{\"pass\": %ld, \"files\": %zu, \"bytes\": %llu, \"seconds\": %.6f, "
                    "\"us_per_file\": %.3f, \"MB_per_s\": %.2f}\n",
                    pass, paths.size(), bytes, seconds, seconds * 1e6 / files,
                    seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0);
        std::fflush(stdout);
    }
    return 0;
}
