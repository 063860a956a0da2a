// SPDX-License-Identifier: MIT
#include "manifest_file.hpp"

#include "clairfs/sys/syscalls.hpp"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace clairfs::ranges {
namespace {

// (directory, last component) of a path as given; "." for a bare name.
std::pair<std::string, std::string> split(const std::string& path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

Failure canonical(const std::string& path, std::string& out) {
    char buf[PATH_MAX];
    if (!realpath(path.c_str(), buf))
        return failure("cannot resolve " + path + ": " + strerror(errno));
    out = buf;
    return {};
}

} // namespace

Failure manifest_path(const std::string& file, const std::string& root, std::string& out) {
    auto [dir, name] = split(file);
    if (name.empty() || name == "." || name == "..")
        return refused(file + " does not name a file");
    std::string real_dir, real_root;
    if (auto f = canonical(dir, real_dir); !f.message.empty()) return f;
    if (auto f = canonical(root, real_root); !f.message.empty()) return f;
    std::string full = (real_dir == "/" ? "" : real_dir) + "/" + name;
    std::string prefix = real_root == "/" ? "/" : real_root + "/";
    if (!full.starts_with(prefix))
        return refused(full + " is not below the dataset root " + real_root + " (--root)");
    out = full.substr(prefix.size());
    if (out.find_first_of("\t\n\r") != std::string::npos)
        return refused(full + ": its name holds a tab or a line break, which a ranges manifest "
                              "line cannot");
    return {};
}

Failure write_manifest(const std::string& path,
                       const std::function<bool(const WritePiece& write)>& produce) {
    auto [dir, name] = split(path);
    std::string tmp = dir + "/." + name + ".XXXXXX";
    int fd = mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) return failure("cannot create a file in " + dir + ": " + strerror(errno));
    // mkostemp makes the file 0600; a manifest is as readable as any file
    // the user creates.
    mode_t mask = umask(0);
    umask(mask);
    int error = 0;
    // A producer that stops without a failed write still leaves the text
    // short: never renamed over the manifest.
    if (!produce([&](std::string_view piece) {
            return (error = -sys::write_full(fd, piece.data(), piece.size())) == 0;
        }) &&
        error == 0)
        error = EIO;
    if (error == 0 && fsync(fd) != 0) error = errno;
    Failure f;
    if (error != 0) f = failure("cannot write " + tmp + ": " + strerror(error));
    if (f.message.empty() && fchmod(fd, 0666 & ~mask) != 0)
        f = failure("cannot chmod " + tmp + ": " + strerror(errno));
    sys::close(fd);
    if (f.message.empty() && rename(tmp.c_str(), path.c_str()) != 0)
        f = failure("cannot rename " + tmp + " to " + path + ": " + strerror(errno));
    if (!f.message.empty()) unlink(tmp.c_str());
    return f;
}

} // namespace clairfs::ranges
