// SPDX-License-Identifier: MIT
#include "control_client.hpp"

#include "clairfs/cli/commands.hpp"
#include "clairfs/log.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "mount_table.hpp"

#include <nlohmann/json.hpp>
#include <sys/stat.h>

namespace clairfs::cli {
namespace {

// Writes `text` to the control file in one write(2); 0 or the -errno of
// the open, the write or the close (a refused registration is -EINVAL, or
// -EBUSY when another process's running job holds its job's name).
int write_control_file(const std::string& abs_mount, const std::string& text) {
    int fd =
        sys::neg_errno(::open(control_path(abs_mount).c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    if (fd < 0) return fd;
    // One write: the daemon applies a registration as soon as it is whole.
    ssize_t rv = ::write(fd, text.data(), text.size());
    int err = rv < 0 ? -errno : 0;
    if (err == 0 && static_cast<size_t>(rv) != text.size()) err = -EIO;
    // A registration the daemon could only judge at close is refused there.
    int closed = sys::close(fd);
    return err ? err : closed;
}

// A one-line failure of a write to the control file, for stderr; exit_failure.
int report_write_failure(const std::string& abs_mount, int err) {
    if (err == -EINVAL || err == -EBUSY)
        LOG_ERROR("registration refused: %s", refusal_reason(abs_mount).c_str());
    else if (err == -EACCES || err == -EPERM)
        LOG_ERROR("cannot write %s: %s (only root, the user who mounted it and its --control-owner may register)",
                  control_path(abs_mount).c_str(), sys::error_text(err));
    else
        LOG_ERROR("cannot write %s: %s", control_path(abs_mount).c_str(), sys::error_text(err));
    return exit_failure;
}

} // namespace

std::string find_clairfs_mount(const std::string& mount, std::string& abs) {
    abs = resolved_path(mount);
    if (!is_clairfs_mount(abs)) return "'" + mount + "' is not a clairfs mount point";
    return "";
}

std::string control_path(const std::string& abs_mount) {
    return abs_mount + "/.clairfs/control";
}

std::string status_path(const std::string& abs_mount) {
    return abs_mount + "/.clairfs/status";
}

int read_control_file(const std::string& path, std::string& text) {
    int fd = sys::neg_errno(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd < 0) return fd;
    text.clear();
    char buf[65536];
    for (;;) {
        ssize_t got = ::read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int err = -errno;
            sys::close(fd);
            return err;
        }
        if (got == 0) break;
        text.append(buf, static_cast<size_t>(got));
    }
    sys::close(fd);
    return 0;
}

std::string refusal_reason(const std::string& abs_mount) {
    std::string text;
    if (int rv = read_control_file(status_path(abs_mount), text); rv < 0)
        return std::string("(cannot read status: ") + sys::error_text(rv) + ")";
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("error") || !j["error"].is_string())
        return "(status gives no reason)";
    return j["error"].get<std::string>();
}

int locate_mount(const std::string& mount, std::string& abs) {
    if (auto why = find_clairfs_mount(mount, abs); !why.empty()) {
        LOG_ERROR("%s", why.c_str());
        return exit_failure;
    }
    return exit_ok;
}

int send_control(const std::string& abs_mount, const std::string& text) {
    int err = write_control_file(abs_mount, text);
    if (err == 0) return exit_ok;
    return report_write_failure(abs_mount, err);
}

} // namespace clairfs::cli
