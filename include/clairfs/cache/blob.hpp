// SPDX-License-Identifier: MIT
// A whole file's bytes, shared by reference: a tier that evicts it only
// drops its own reference, so a FUSE reply still copying from it is safe.
#pragma once

#include <cstdint>
#include <memory>

namespace clairfs::cache {

struct Blob {
    std::unique_ptr<char[]> bytes;
    uint64_t size = 0;

    static std::shared_ptr<Blob> make(uint64_t size); // bytes uninitialised
};

using BlobRef = std::shared_ptr<const Blob>;

} // namespace clairfs::cache
