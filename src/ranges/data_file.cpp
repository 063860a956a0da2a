// SPDX-License-Identifier: MIT
#include "extents.hpp"

#include "clairfs/sys/syscalls.hpp"

namespace clairfs::ranges {

DataFile::~DataFile() {
    if (fd >= 0) sys::close(fd);
}

Failure DataFile::open(const std::string& path) {
    fd = sys::openat(AT_FDCWD, path.c_str(), O_RDONLY);
    if (fd < 0) return failure("cannot open " + path + ": " + sys::error_text(fd));
    struct stat st;
    if (int rv = sys::fstat(fd, &st); rv < 0)
        return failure("cannot stat " + path + ": " + sys::error_text(rv));
    if (!S_ISREG(st.st_mode)) return refused(path + " is not a regular file");
    size = static_cast<uint64_t>(st.st_size);
    return {};
}

} // namespace clairfs::ranges
