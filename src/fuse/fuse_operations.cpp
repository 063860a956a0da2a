// SPDX-License-Identifier: MIT
#include "fuse_ops.hpp"
#include "request_guard.hpp"

namespace clairfs::fuse {
namespace {

// Every operation that can fail inside clairfs runs in the catch-all
// (request_guard.hpp); the read-only refusals only answer EROFS.
fuse_lowlevel_ops make_operations() {
    fuse_lowlevel_ops ops{};
    ops.init = fuse_init;
    ops.lookup = guarded<"lookup", fuse_lookup>;
    ops.forget = guarded_no_reply<"forget", fuse_forget>;
    ops.forget_multi = guarded_no_reply<"forget_multi", fuse_forget_multi>;
    ops.getattr = guarded<"getattr", fuse_getattr>;
    ops.readlink = guarded<"readlink", fuse_readlink>;
    ops.opendir = guarded<"opendir", fuse_opendir>;
    ops.readdir = guarded<"readdir", fuse_readdir>;
    ops.readdirplus = guarded<"readdirplus", fuse_readdirplus>;
    ops.open = guarded<"open", fuse_open>;
    ops.read = guarded<"read", fuse_read>;
    ops.release = guarded<"release", fuse_release>;
    ops.statfs = guarded<"statfs", fuse_statfs>;
    // .clairfs/control is the one writable file.
    ops.write = guarded<"write", fuse_write>;
    ops.flush = guarded<"flush", fuse_flush>;
    ops.setattr = guarded<"setattr", fuse_setattr>;
    fill_readonly_operations(ops);
    return ops;
}

} // namespace

const fuse_lowlevel_ops& operations() {
    static const fuse_lowlevel_ops ops = make_operations();
    return ops;
}

} // namespace clairfs::fuse
