// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>

namespace clairfs::layout {

// torchvision's `fname.lower().endswith(IMG_EXTENSIONS)`, on the name's bytes.
bool has_image_extension(std::string_view name);

// Keras's `fname.lower().endswith(ALLOWLIST_FORMATS)` for
// image_dataset_from_directory: .bmp .gif .jpeg .jpg .png.
bool has_keras_image_extension(std::string_view name);

} // namespace clairfs::layout
