// SPDX-License-Identifier: MIT
#include "image_extensions.hpp"

#include <algorithm>

namespace clairfs::layout {
namespace {

// torchvision.datasets.folder.IMG_EXTENSIONS (0.14.1).
constexpr std::string_view img_extensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                               ".pgm", ".tif",  ".tiff", ".webp"};

// keras.src.utils.image_dataset_utils.ALLOWLIST_FORMATS (3.15.1).
constexpr std::string_view keras_extensions[] = {".bmp", ".gif", ".jpeg", ".jpg", ".png"};

char ascii_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// ASCII case folding of the last bytes is exact, not an approximation of
// Python's str.lower(): of all code points only U+0130 (lowers to
// "i\u0307", which ends in a non-ASCII mark) and U+212A KELVIN SIGN (lowers
// to "k", in no extension) lower to anything ASCII, checked over all of
// Unicode with Python 3.11; the surrogate escapes of non-UTF-8 bytes are
// left alone. So the suffix matches in Python iff it matches here.
template <size_t N> bool ends_with_any(std::string_view name, const std::string_view (&exts)[N]) {
    return std::any_of(std::begin(exts), std::end(exts),
                       [name](std::string_view ext) {
                           if (name.size() < ext.size()) return false;
                           auto tail = name.substr(name.size() - ext.size());
                           return std::equal(tail.begin(), tail.end(), ext.begin(),
                                             [](char a, char b) { return ascii_lower(a) == b; });
                       });
}

} // namespace

bool has_image_extension(std::string_view name) {
    return ends_with_any(name, img_extensions);
}

bool has_keras_image_extension(std::string_view name) {
    return ends_with_any(name, keras_extensions);
}

} // namespace clairfs::layout
