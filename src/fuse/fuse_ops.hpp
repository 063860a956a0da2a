// SPDX-License-Identifier: MIT
// The FUSE operations, one per file in this folder.
#pragma once

#include "clairfs/fuse/filesystem.hpp"

namespace clairfs::fuse {

void fuse_init(void* userdata, fuse_conn_info* conn);
void fuse_lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
void fuse_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fuse_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets);
void fuse_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fuse_readlink(fuse_req_t req, fuse_ino_t ino);
void fuse_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fuse_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void fuse_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void fuse_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fuse_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi);
void fuse_release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fuse_write(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
                fuse_file_info* fi);
void fuse_flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
void fuse_setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set,
                  fuse_file_info* fi);
void fuse_statfs(fuse_req_t req, fuse_ino_t ino);
void fill_readonly_operations(fuse_lowlevel_ops& ops);

} // namespace clairfs::fuse
