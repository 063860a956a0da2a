// SPDX-License-Identifier: MIT
#include "clairfs/sys/contained.hpp"
#include "clairfs/index/scanner.hpp"

#include "clairfs/index/symlink_policy.hpp"
#include "clairfs/sys/syscalls.hpp"
#include "scan_progress.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <dirent.h>
#include <mutex>
#include <thread>
#include <vector>

namespace clairfs::index {
namespace {

struct Work {
    RawDir* dir;
    std::string rel; // path relative to the root, "" for the root
};

std::optional<std::string> realpath_of(const std::string& path) {
    char buf[PATH_MAX];
    if (!::realpath(path.c_str(), buf)) return std::nullopt;
    return std::string(buf);
}

void fill_attrs(RawEntry& e, const struct stat& st) {
    e.mode = st.st_mode;
    e.size = static_cast<uint64_t>(st.st_size);
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.blksize = static_cast<uint32_t>(st.st_blksize);
    e.blocks = static_cast<uint64_t>(st.st_blocks);
}

class Scanner {
public:
    Scanner(int root_fd, const std::string& root_real, ScanReport& report)
        : root_fd_(root_fd), root_real_(root_real), report_(report) {}

    void run(RawDir* root, unsigned threads) {
        queue_.push_back({root, ""});
        outstanding_ = 1;
        std::vector<std::thread> pool;
        for (unsigned i = 0; i < std::max(1u, threads); ++i)
            pool.emplace_back([this] { worker(); });
        for (auto& t : pool) t.join();
        report_.entries = entries_.load();
    }

    const std::atomic<uint64_t>& entries() const { return entries_; }

private:
    int root_fd_;
    const std::string& root_real_;
    ScanReport& report_;
    std::atomic<uint64_t> entries_{0};
    // Lock order: leaf. Guards queue_, outstanding_ and report_'s counters;
    // never held across a system call.
    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<Work> queue_;
    size_t outstanding_ = 0; // queued plus being scanned

    void worker() {
        for (;;) {
            Work w;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [this] { return !queue_.empty() || outstanding_ == 0; });
                if (queue_.empty()) return;
                w = std::move(queue_.back());
                queue_.pop_back();
            }
            std::vector<Work> found;
            // A directory that fails inside clairfs is listed as unreadable
            // (EIO), like one the file system refused; the scan goes on.
            if (!sys::contained("scanning a directory", [&] { scan_dir(w, found); }).empty()) {
                found.clear();
                unreadable(w, -EIO);
            }
            std::lock_guard lock(mutex_);
            outstanding_ += found.size();
            --outstanding_;
            for (auto& f : found) queue_.push_back(std::move(f));
            if (!found.empty() || outstanding_ == 0) wake_.notify_all();
        }
    }

    void scan_dir(Work& w, std::vector<Work>& found) {
        int fd = w.rel.empty() ? sys::openat(root_fd_, ".", O_RDONLY | O_DIRECTORY)
                               : sys::open_beneath(root_fd_, w.rel.c_str(), O_RDONLY | O_DIRECTORY);
        if (fd < 0) return unreadable(w, fd);
        DIR* d = fdopendir(fd);
        if (!d) {
            int err = -errno;
            sys::close(fd);
            return unreadable(w, err);
        }
        errno = 0;
        while (struct dirent* de = readdir(d)) {
            std::string_view name = de->d_name;
            if (name == "." || name == "..") continue;
            add_entry(w, fd, de->d_name, found);
            entries_.fetch_add(1, std::memory_order_relaxed);
            errno = 0;
        }
        int err = errno;
        closedir(d);
        if (err != 0) {
            // A listing cut short must not look complete: drop what we have.
            found.clear();
            unreadable(w, -err);
        }
    }

    void unreadable(Work& w, int err) {
        w.dir->entries.clear();
        w.dir->scan_errno = -err;
        std::lock_guard lock(mutex_);
        if (report_.unreadable_dirs++ == 0)
            report_.first_unreadable_dir = w.rel.empty() ? "." : w.rel;
    }

    void add_entry(Work& w, int dirfd, const char* name, std::vector<Work>& found) {
        struct stat st;
        if (sys::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            std::lock_guard lock(mutex_);
            ++report_.vanished;
            return;
        }
        std::string rel = w.rel.empty() ? std::string(name) : w.rel + "/" + name;
        RawEntry e;
        e.name = name;
        fill_attrs(e, st);
        if (S_ISDIR(st.st_mode)) {
            e.dir = std::make_unique<RawDir>();
            found.push_back({e.dir.get(), rel});
        } else if (S_ISLNK(st.st_mode)) {
            if (!confine(w, dirfd, name, rel, e)) return;
        } else if (!S_ISREG(st.st_mode)) {
            std::lock_guard lock(mutex_);
            ++report_.hidden_special;
            return;
        }
        w.dir->entries.push_back(std::move(e));
    }

    bool confine(const Work& w, int dirfd, const char* name, const std::string& rel, RawEntry& e) {
        std::string target;
        if (sys::readlinkat(dirfd, name, target) < 0) return false;
        std::string link_dir = w.rel.empty() ? root_real_ : root_real_ + "/" + w.rel;
        SymlinkFacts facts{root_real_, link_dir, target, realpath_of(root_real_ + "/" + rel)};
        auto shown = confine_symlink(facts);
        if (!shown) {
            std::lock_guard lock(mutex_);
            if (report_.hidden_symlinks++ == 0)
                report_.first_hidden_symlink = rel + " -> " + target;
            return false;
        }
        e.link_target = std::move(*shown);
        return true;
    }
};

} // namespace

int scan(int root_fd, const std::string& root_real, const ScanOptions& options, RawTree& tree,
         ScanReport& report) {
    auto start = std::chrono::steady_clock::now();
    struct stat st;
    if (int rv = sys::fstat(root_fd, &st); rv < 0) return rv;
    tree.root = RawEntry{};
    fill_attrs(tree.root, st);
    tree.root.dir = std::make_unique<RawDir>();

    Scanner scanner(root_fd, root_real, report);
    {
        ScanProgress progress(root_real, options.progress, scanner.entries());
        scanner.run(tree.root.dir.get(), options.threads);
    }
    report.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tree.root.dir->scan_errno) return -tree.root.dir->scan_errno;
    return 0;
}

} // namespace clairfs::index
