// SPDX-License-Identifier: MIT
#include "dir_listing.hpp"

#include "control_nodes.hpp"

#include <string>
#include <sys/stat.h>
#include <vector>

namespace clairfs::fuse {
namespace {

class ListingBuffer {
public:
    ListingBuffer(fuse_req_t req, size_t size, bool plus) : req_(req), buf_(size), plus_(plus) {}

    // Appends one entry; false once the reply is full.
    bool add(const Filesystem& fs, const char* name, const index::Node& n, off_t next) {
        size_t room = buf_.size() - used_;
        size_t need;
        if (plus_) {
            fuse_entry_param e;
            fill_entry(fs, n, e);
            need = fuse_add_direntry_plus(req_, buf_.data() + used_, room, name, &e, next);
        } else {
            struct stat st {};
            st.st_ino = ino_of(fs.index.id_of(n));
            st.st_mode = n.mode; // the kernel derives d_type from it
            need = fuse_add_direntry(req_, buf_.data() + used_, room, name, &st, next);
        }
        if (need > room) return false;
        used_ += need;
        return true;
    }

    void reply() { fuse_reply_buf(req_, buf_.data(), used_); }

private:
    fuse_req_t req_;
    std::vector<char> buf_;
    size_t used_ = 0;
    bool plus_;
};

} // namespace

void reply_listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
    if (control_listing(req, ino, size, off, plus)) return;
    Filesystem& fs = filesystem_of(req);
    const index::Node* dir = node_of(fs, ino);
    if (!dir) return reply_error(req, -ENOENT);
    if (!S_ISDIR(dir->mode)) return reply_error(req, -ENOTDIR);
    if (off < 0) return reply_error(req, -EINVAL);

    ListingBuffer out(req, size, plus);
    auto kids = fs.index.children(*dir);
    for (auto pos = static_cast<size_t>(off); pos < kids.size() + 2; ++pos) {
        const index::Node* n;
        std::string name;
        if (pos == 0) {
            n = dir;
            name = ".";
        } else if (pos == 1) {
            n = &fs.index.node(dir->parent);
            name = "..";
        } else {
            n = &kids[pos - 2];
            name = fs.index.name(*n);
            // .clairfs/ is reachable but never listed: torchvision would
            // count it as a class. A backing .clairfs is shadowed by it.
            if (ino == ino_of(index::root_id) && name == control_dir_name) continue;
        }
        if (!out.add(fs, name.c_str(), *n, static_cast<off_t>(pos + 1))) break;
    }
    out.reply();
}

} // namespace clairfs::fuse
