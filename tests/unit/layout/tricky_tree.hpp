// SPDX-License-Identifier: MIT
// A dataset tree with every ImageFolder corner we know of, and the order
// torchvision 0.14.1 gives its samples. The expected list was written by
// hand from the rules and then checked once against
// torchvision.datasets.ImageFolder(root).samples on this very tree.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace clairfs::test {

inline void make_tricky_tree(const std::filesystem::path& root) {
    namespace fs = std::filesystem;
    auto file = [&](const std::string& rel) {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << rel;
    };
    for (const char* rel : {"README.txt",
                            "top.jpg",
                            ".hidden-class/h.ppm",
                            "Zebra/z.pgm",
                            "cat/.hidden.jpg",
                            "cat/10.jpg",
                            "cat/9.jpg",
                            "cat/B.JPG",
                            "cat/a.jpg",
                            "cat/c.Jpeg",
                            "cat/d.TIFF",
                            "cat/e.txt",
                            "cat/img 1.png",
                            "cat/img-2.png",
                            "cat/img_3.png",
                            "cat/.cache/k.jpg",
                            "cat/.cache/old/k2.jpg",
                            "cat/dir.jpg/q.png",
                            "cat/sub/x.jpg",
                            "cat/sub x/y.jpg",
                            "cat/sub-x/z.jpg",
                            "cat/sub/deeper/w.jpg",
                            "dog/p.bmp",
                            "dog/\xc3\xa9.webp",
                            "dog/inner/i.png",
                            "with space/s.tif",
                            "with space/S2.WEBP"})
        file(rel);
    fs::create_symlink("missing.jpg", root / "cat/broken.jpg");
    fs::create_symlink("a.jpg", root / "cat/link.jpg");
    fs::create_symlink("../dog/inner", root / "cat/linked-sub");
    fs::create_directory_symlink("cat", root / "cat link");
    fs::create_directory_symlink("dog", root / "dirlink.jpg");
}

inline std::vector<std::string> tricky_classes() {
    return {".hidden-class", "Zebra", "cat", "cat link", "dirlink.jpg", "dog", "with space"};
}

// One class's samples under the name `cls` (cat and "cat link" share them).
inline std::vector<std::string> tricky_cat(const std::string& cls) {
    std::vector<std::string> out;
    for (const char* rel : {".hidden.jpg",   "10.jpg",
                            "9.jpg",         "B.JPG",
                            "a.jpg",         "broken.jpg",
                            "c.Jpeg",        "d.TIFF",
                            "img 1.png",     "img-2.png",
                            "img_3.png",     "link.jpg",
                            ".cache/k.jpg",  ".cache/old/k2.jpg",
                            "dir.jpg/q.png", "linked-sub/i.png",
                            "sub/x.jpg",     "sub x/y.jpg",
                            "sub-x/z.jpg",   "sub/deeper/w.jpg"})
        out.push_back(cls + "/" + rel);
    return out;
}

inline std::vector<std::string> tricky_samples() {
    std::vector<std::string> out = {".hidden-class/h.ppm", "Zebra/z.pgm"};
    for (const char* cls : {"cat", "cat link"})
        for (auto& p : tricky_cat(cls)) out.push_back(p);
    for (const char* cls : {"dirlink.jpg", "dog"})
        for (const char* rel : {"p.bmp", "\xc3\xa9.webp", "inner/i.png"})
            out.push_back(std::string(cls) + "/" + rel);
    out.push_back("with space/S2.WEBP");
    out.push_back("with space/s.tif");
    return out;
}

} // namespace clairfs::test
