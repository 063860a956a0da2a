// SPDX-License-Identifier: MIT
// faultfs SOURCE MOUNTPOINT [-f] [-o opts]: a passthrough FUSE file system
// for the fault tests, which inject here what the kernel cannot (no
// device-mapper, no fault injection). Writing lines to MOUNTPOINT/.faultfs
// sets rules for paths (a glob if it has *?[, else a substring of the path
// as seen inside the mount, with its leading '/'):
//   eio PATTERN          reads fail with EIO
//   short PATTERN        reads return half of what was asked (at least 1 byte)
//   delay MS PATTERN     reads wait MS milliseconds first
//   hang PATTERN         reads wait until `clear`, SIGTERM/SIGINT or kill -9
//   corrupt PATTERN      reads return every 4096th byte flipped
//   enospc PATTERN       writes and fallocate fail with ENOSPC
//   clear                forgets every rule and releases hung reads
// Reading MOUNTPOINT/.faultfs (not listed) gives one line of counters,
// then the rules.
#include "fault_rules.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <string>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>

namespace {

constexpr const char* control_path = "/.faultfs";

// An open file: the rules match the path it was opened by, which a read
// keeps even after the file was renamed or unlinked.
struct Handle {
    int fd = -1; // -1: the control file
    std::string path;
};

int g_source = -1; // the source directory; every path is opened relative to it
faultfs::Rules g_rules;

int neg(int rv) {
    return rv < 0 ? -errno : rv;
}

// Paths come with a leading '/'; openat wants them relative to the source.
const char* rel(const char* path) {
    return path[1] ? path + 1 : ".";
}

// NULL for a file unlinked while open.
bool is_control(const char* path) {
    return path && std::strcmp(path, control_path) == 0;
}

Handle& handle(const fuse_file_info* fi) {
    return *reinterpret_cast<Handle*>(fi->fh);
}

bool session_over() {
    fuse_context* c = fuse_get_context();
    return c && c->fuse && fuse_session_exited(fuse_get_session(c->fuse));
}

// A hung read polls, so that neither `clear` nor the end of the session
// (SIGTERM or SIGINT, or an abort through /sys/fs/fuse/connections) can
// miss its wake-up. A lazy unmount is not an end: the kernel keeps the
// connection while files are open, so a test stops faultfs by signal.
int hang(uint64_t generation) {
    g_rules.hung(+1);
    while (g_rules.generation() == generation && !session_over())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    g_rules.hung(-1);
    return -EIO;
}

int fs_getattr(const char* path, struct stat* st, fuse_file_info* fi) {
    if (is_control(path)) {
        *st = {};
        st->st_mode = S_IFREG | 0666;
        st->st_nlink = 1;
        return 0;
    }
    if (fi && handle(fi).fd >= 0) return neg(::fstat(handle(fi).fd, st));
    return neg(::fstatat(g_source, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

int fs_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*,
               fuse_readdir_flags) {
    int fd = ::openat(g_source, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    DIR* d = ::fdopendir(fd);
    if (!d) {
        int err = errno;
        ::close(fd);
        return -err;
    }
    while (dirent* e = ::readdir(d)) {
        struct stat st {};
        st.st_mode = static_cast<mode_t>(DTTOIF(e->d_type));
        if (fill(buf, e->d_name, &st, 0, static_cast<fuse_fill_dir_flags>(0))) break;
    }
    ::closedir(d);
    return 0;
}

// Every file is direct_io: each read reaches the rules (no page cache in
// between), and O_DIRECT opens, as the SSD tier makes, are accepted with
// no alignment games. O_DIRECT itself is not passed on: the source may
// be a tmpfs, which refuses it.
int open_at(const char* path, int flags, mode_t mode, fuse_file_info* fi) {
    int fd = -1;
    if (!is_control(path)) {
        fd = ::openat(g_source, rel(path), (flags & ~O_DIRECT) | O_CLOEXEC, mode);
        if (fd < 0) return -errno;
    }
    fi->fh = reinterpret_cast<uint64_t>(new Handle{fd, path});
    fi->direct_io = 1;
    return 0;
}

int fs_open(const char* path, fuse_file_info* fi) {
    return open_at(path, fi->flags, 0, fi);
}

int fs_create(const char* path, mode_t mode, fuse_file_info* fi) {
    return open_at(path, fi->flags | O_CREAT, mode, fi);
}

int read_control(char* buf, size_t size, off_t off) {
    std::string text = g_rules.report();
    if (static_cast<size_t>(off) >= text.size()) return 0;
    size_t n = std::min(size, text.size() - static_cast<size_t>(off));
    std::memcpy(buf, text.data() + off, n);
    return static_cast<int>(n);
}

int fs_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
    const Handle& h = handle(fi);
    if (h.fd < 0) return read_control(buf, size, off);
    faultfs::Verdict v = g_rules.on_read(h.path);
    if (v.delay_ms) std::this_thread::sleep_for(std::chrono::milliseconds(v.delay_ms));
    if (v.hang) return hang(v.generation);
    if (v.eio) return -EIO;
    if (v.shorten && size > 1) size /= 2;
    ssize_t n = ::pread(h.fd, buf, size, off);
    if (n < 0) return -errno;
    if (v.corrupt)
        for (ssize_t i = 0; i < n; i += 4096) buf[i] = static_cast<char>(~buf[i]);
    return static_cast<int>(n);
}

int fs_write(const char*, const char* buf, size_t size, off_t off, fuse_file_info* fi) {
    const Handle& h = handle(fi);
    if (h.fd < 0) {
        std::string why = g_rules.apply(std::string(buf, size));
        if (!why.empty()) fprintf(stderr, "faultfs: %s\n", why.c_str());
        return why.empty() ? static_cast<int>(size) : -EINVAL;
    }
    if (g_rules.on_write(h.path)) return -ENOSPC;
    ssize_t n = ::pwrite(h.fd, buf, size, off);
    return n < 0 ? -errno : static_cast<int>(n);
}

int fs_fallocate(const char*, int mode, off_t off, off_t len, fuse_file_info* fi) {
    const Handle& h = handle(fi);
    if (h.fd < 0) return -EINVAL;
    if (g_rules.on_write(h.path)) return -ENOSPC;
    return neg(::fallocate(h.fd, mode, off, len));
}

int fs_release(const char*, fuse_file_info* fi) {
    Handle* h = &handle(fi);
    if (h->fd >= 0) ::close(h->fd);
    delete h;
    return 0;
}

int fs_fsync(const char*, int datasync, fuse_file_info* fi) {
    int fd = handle(fi).fd;
    if (fd < 0) return 0;
    return neg(datasync ? ::fdatasync(fd) : ::fsync(fd));
}

int fs_truncate(const char* path, off_t size, fuse_file_info* fi) {
    if (is_control(path) || (fi && handle(fi).fd < 0)) return 0;
    if (fi) return neg(::ftruncate(handle(fi).fd, size));
    int fd = ::openat(g_source, rel(path), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int rv = neg(::ftruncate(fd, size));
    ::close(fd);
    return rv;
}

int fs_statfs(const char*, struct statvfs* st) {
    return neg(::fstatvfs(g_source, st));
}

int fs_mkdir(const char* path, mode_t mode) {
    return neg(::mkdirat(g_source, rel(path), mode));
}

int fs_unlink(const char* path) {
    return neg(::unlinkat(g_source, rel(path), 0));
}

int fs_rmdir(const char* path) {
    return neg(::unlinkat(g_source, rel(path), AT_REMOVEDIR));
}

int fs_rename(const char* from, const char* to, unsigned int flags) {
    return neg(::renameat2(g_source, rel(from), g_source, rel(to), flags));
}

int fs_chmod(const char* path, mode_t mode, fuse_file_info* fi) {
    if (is_control(path)) return 0;
    if (!path) return neg(::fchmod(handle(fi).fd, mode));
    return neg(::fchmodat(g_source, rel(path), mode, 0));
}

int fs_chown(const char* path, uid_t uid, gid_t gid, fuse_file_info* fi) {
    if (!path) return neg(::fchown(handle(fi).fd, uid, gid));
    return neg(::fchownat(g_source, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

int fs_utimens(const char* path, const timespec tv[2], fuse_file_info* fi) {
    if (is_control(path)) return 0;
    if (!path) return neg(::futimens(handle(fi).fd, tv));
    return neg(::utimensat(g_source, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

int fs_readlink(const char* path, char* buf, size_t size) {
    ssize_t n = ::readlinkat(g_source, rel(path), buf, size - 1);
    if (n < 0) return -errno;
    buf[n] = '\0';
    return 0;
}

void* fs_init(fuse_conn_info*, fuse_config* cfg) {
    // Nothing cached in the kernel: sizes change under writes and rules
    // change under reads. hard_remove: the SSD tier unlinks open files.
    cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;
    cfg->direct_io = 1;
    cfg->hard_remove = 1;
    cfg->nullpath_ok = 0;
    return nullptr;
}

fuse_operations make_operations() {
    fuse_operations op{};
    op.init = fs_init;
    op.getattr = fs_getattr;
    op.readdir = fs_readdir;
    op.open = fs_open;
    op.create = fs_create;
    op.read = fs_read;
    op.write = fs_write;
    op.fallocate = fs_fallocate;
    op.release = fs_release;
    op.fsync = fs_fsync;
    op.truncate = fs_truncate;
    op.statfs = fs_statfs;
    op.mkdir = fs_mkdir;
    op.unlink = fs_unlink;
    op.rmdir = fs_rmdir;
    op.rename = fs_rename;
    op.chmod = fs_chmod;
    op.chown = fs_chown;
    op.utimens = fs_utimens;
    op.readlink = fs_readlink;
    return op;
}

// Hung reads each hold a thread; many may hang at once without starving
// the reads of other files.
int serve(fuse* f, bool foreground) {
    if (fuse_daemonize(foreground ? 1 : 0) != 0) return 1;
    fuse_loop_config* loop = fuse_loop_cfg_create();
    fuse_loop_cfg_set_max_threads(loop, 256);
    fuse_loop_cfg_set_idle_threads(loop, 16);
    int rv = fuse_loop_mt(f, loop);
    fuse_loop_cfg_destroy(loop);
    // libfuse returns the signal that ended the loop: a requested stop.
    return rv == 0 || rv == SIGTERM || rv == SIGINT || rv == SIGHUP ? 0 : 1;
}

} // namespace

int main(int argc, char* argv[]) {
    if (argc < 3) {
        fprintf(stderr, "usage: faultfs SOURCE MOUNTPOINT [-f] [-o opts]\n");
        return 2;
    }
    g_source = ::open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (g_source < 0) {
        fprintf(stderr, "faultfs: cannot open %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    // fuse_parse_cmdline sees "faultfs MOUNTPOINT [opts]".
    argv[1] = argv[0];
    fuse_args args = FUSE_ARGS_INIT(argc - 1, argv + 1);
    fuse_cmdline_opts opts{};
    if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) return 2;
    fuse_operations op = make_operations();
    fuse* f = fuse_new(&args, &op, sizeof(op), nullptr);
    int rv = 1;
    if (f && fuse_mount(f, opts.mountpoint) == 0) {
        fuse_set_signal_handlers(fuse_get_session(f));
        rv = serve(f, opts.foreground);
        fuse_remove_signal_handlers(fuse_get_session(f));
        fuse_unmount(f);
    }
    if (f) fuse_destroy(f);
    free(opts.mountpoint);
    fuse_opt_free_args(&args);
    return rv;
}
