// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"

namespace clairfs::fuse {
namespace {

fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = fuse_init;
    ops.lookup = fuse_lookup;
    ops.forget = fuse_forget;
    ops.forget_multi = fuse_forget_multi;
    ops.getattr = fuse_getattr;
    ops.readlink = fuse_readlink;
    ops.opendir = fuse_opendir;
    ops.readdir = fuse_readdir;
    ops.readdirplus = fuse_readdirplus;
    ops.open = fuse_open;
    ops.read = fuse_read;
    ops.release = fuse_release;
    ops.statfs = fuse_statfs;
    // .clairfs/control is the one writable file.
    ops.write = fuse_write;
    ops.flush = fuse_flush;
    ops.setattr = fuse_setattr;
    fill_readonly_operations(ops);
    return ops;
}

} // namespace

const fuse_lowlevel_ops& operations() {
    static const fuse_lowlevel_ops ops = make_operations();
    return ops;
}

} // namespace clairfs::fuse
