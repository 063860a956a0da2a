// SPDX-License-Identifier: MIT
// `clairfs ranges KIND SOURCE`: writes the ranges manifest of a dataset held
// in one file (an LMDB, an HDF5 dataset, a packed binary), for a
// registration with layout "ranges". The writers are in src/ranges/.
#include "clairfs/cli/commands.hpp"
#include "clairfs/config/value_parsers.hpp"
#include "clairfs/layout/ranges_manifest.hpp"
#include "ranges/manifest_file.hpp"
#include "ranges/ranges_writers.hpp"

#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace clairfs::cli {
namespace {

struct RangesArgs {
    std::string kind, source, out, root, dataset, record_size, header, offsets;
    uint64_t record_bytes = 0, header_bytes = 0; // record_size and header, parsed
    bool help = false;
};

struct RangesKind {
    std::string_view name, usage, about, options;
};

constexpr std::string_view common_options =
    "  --out FILE           write the manifest to FILE, whole (by rename), not to stdout\n"
    "  --root ROOT          the dataset root, which manifest paths are relative to\n";

constexpr RangesKind kinds[] = {
    {"lmdb", "clairfs ranges lmdb DIR [--out FILE] [--root ROOT]",
     "Sample i is the value of the i-th key of the main database of the LMDB environment\n"
     "DIR, in LMDB's key order (bytewise, a shorter key before the keys it begins: the\n"
     "order of Python's sorted() over bytes keys), as bytes of DIR/data.mdb. Values in\n"
     "leaf pages and in overflow pages alike; a DUPSORT database or one with named\n"
     "databases is refused. ROOT defaults to DIR.\n",
     ""},
    {"hdf5", "clairfs ranges hdf5 FILE --dataset NAME [--out FILE] [--root ROOT]",
     "Sample i is row i (index along the first axis) of dataset NAME of FILE. The\n"
     "dataset is contiguous, or chunked with no filter and chunks of whole rows; a\n"
     "compressed or filtered, compact, virtual, external or variable-length dataset is\n"
     "refused (save it with h5py's create_dataset(name, data=x), contiguous). ROOT\n"
     "defaults to FILE's directory.\n",
     "  --dataset NAME       the dataset's path in FILE, e.g. images or train/x\n"},
    {"packed",
     "clairfs ranges packed FILE (--record-size N [--header BYTES] | --offsets INDEX.npy)\n"
     "                             [--out FILE] [--root ROOT]",
     "Sample i is record i of FILE: bytes [BYTES + i*N, BYTES + (i+1)*N) when the records\n"
     "are N bytes after a header of BYTES (default 0; a remainder is refused), or as\n"
     "INDEX.npy says: a 1-D array o of n + 1 ascending boundaries (sample i is\n"
     "[o[i], o[i+1])), or an (n, 2) array of (offset, length) rows. INDEX.npy holds\n"
     "little-endian 4- or 8-byte integers in C order. ROOT defaults to FILE's directory.\n",
     "  --record-size N      every record is N bytes\n"
     "  --header BYTES       bytes before the first record [0]\n"
     "  --offsets INDEX.npy  where each record lies\n"},
};

const RangesKind* find_kind(std::string_view name) {
    for (const RangesKind& k : kinds)
        if (k.name == name) return &k;
    return nullptr;
}

void print_ranges_help(const RangesKind* kind) {
    if (kind) {
        printf("usage: %.*s\n\n%.*s\noptions:\n%.*s%.*s", static_cast<int>(kind->usage.size()),
               kind->usage.data(),
               static_cast<int>(kind->about.size()), kind->about.data(),
               static_cast<int>(kind->options.size()), kind->options.data(),
               static_cast<int>(common_options.size()), common_options.data());
        return;
    }
    for (const RangesKind& k : kinds)
        printf("%s %.*s\n", &k == kinds ? "usage:" : "      ", static_cast<int>(k.usage.size()),
               k.usage.data());
    printf("\nWrites a ranges manifest: sample i of a dataset held in one file is bytes\n"
           "[offset, offset + length) of that file, one line per sample, for a registration\n"
           "with layout ranges (man clairfs, RANGES MANIFESTS). Every range is checked to lie\n"
           "within the file and to overlap no other.\n\n"
           "kinds:\n"
           "  lmdb    the values of an LMDB's main database, in key order\n"
           "  hdf5    the rows of an HDF5 dataset\n"
           "  packed  fixed-size records, or records a .npy index lists\n\n"
           "options:\n%.*s\n"
           "clairfs ranges KIND --help says what sample i is for that kind.\n",
           static_cast<int>(common_options.size()), common_options.data());
}

int ranges_usage_error(const std::string& kind, const std::string& why) {
    fprintf(stderr, "clairfs ranges: %s (see clairfs ranges%s%s --help)\n", why.c_str(),
            kind.empty() ? "" : " ", kind.c_str());
    return exit_usage;
}

int ranges_failed(const ranges::Failure& f) {
    fprintf(stderr, "clairfs ranges: %s\n", f.message.c_str());
    return f.usage ? exit_usage : exit_failure;
}

// The options that take a value, and the kinds that take them.
struct Option {
    std::string_view name, kinds;
    std::string RangesArgs::*field;
};
constexpr Option options[] = {
    {"--out", "lmdb hdf5 packed", &RangesArgs::out},
    {"--root", "lmdb hdf5 packed", &RangesArgs::root},
    {"--dataset", "hdf5", &RangesArgs::dataset},
    {"--record-size", "packed", &RangesArgs::record_size},
    {"--header", "packed", &RangesArgs::header},
    {"--offsets", "packed", &RangesArgs::offsets},
};

std::string parse_ranges_args(const std::vector<std::string>& args, RangesArgs& a) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& s = args[i];
        if (s == "--help" || s == "-h") {
            a.help = true;
            continue;
        }
        if (a.kind.empty() && !s.starts_with("-")) {
            if (!find_kind(s)) return "unknown kind '" + s + "': lmdb, hdf5 or packed";
            a.kind = s;
            continue;
        }
        const Option* opt = nullptr;
        for (const Option& o : options)
            if (o.name == s) opt = &o;
        if (!opt && s.starts_with("-")) return "unknown option '" + s + "'";
        if (!opt) {
            if (!a.source.empty()) return "unexpected argument '" + s + "'";
            a.source = s;
            continue;
        }
        if (!a.kind.empty() && opt->kinds.find(a.kind) == std::string_view::npos)
            return s + " is not an option of " + a.kind;
        if (i + 1 == args.size()) return s + " needs a value";
        if (!(a.*opt->field).empty()) return s + " is given twice";
        a.*opt->field = args[++i];
        if ((a.*opt->field).empty()) return s + " needs a value";
    }
    return "";
}

// What the kind needs beyond parse_ranges_args' checks.
std::string complete(const RangesArgs& a) {
    if (a.kind.empty()) return "expected a kind: lmdb, hdf5 or packed";
    if (a.source.empty()) return a.kind == "lmdb" ? "expected DIR" : "expected FILE";
    if (a.kind == "hdf5" && a.dataset.empty()) return "expected --dataset NAME";
    if (a.kind == "packed") {
        if (a.record_size.empty() == a.offsets.empty())
            return "expected --record-size N or --offsets INDEX.npy";
        if (!a.header.empty() && a.record_size.empty())
            return "--header goes with --record-size (--offsets lists absolute offsets)";
    }
    return "";
}

std::string parse_size(std::string_view flag, const std::string& text, bool zero_ok,
                       uint64_t& out) {
    if (text.empty()) return "";
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc{} || p != text.data() + text.size() || (!zero_ok && out == 0))
        return std::string(flag) + " '" + text + "' is not a " + (zero_ok ? "" : "positive ") +
               "whole number of bytes";
    return "";
}

std::string absolute(const std::string& path) {
    char buf[PATH_MAX];
    return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// The manifest's comment: the command that wrote it, with absolute paths.
std::string provenance(const RangesArgs& a, const std::string& root) {
    std::string c = "written by: clairfs ranges " + a.kind + " " + absolute(a.source);
    if (!a.dataset.empty()) c += " --dataset " + a.dataset;
    if (!a.record_size.empty()) c += " --record-size " + a.record_size;
    if (!a.header.empty()) c += " --header " + a.header;
    if (!a.offsets.empty()) c += " --offsets " + absolute(a.offsets);
    return c + " --root " + absolute(root);
}

ranges::Failure collect(const RangesArgs& a, const std::string& file, ranges::Progress& progress,
                        std::vector<ranges::Extent>& out) {
    if (a.kind == "lmdb") return ranges::lmdb_extents(a.source, progress, out);
    if (a.kind == "hdf5") return ranges::hdf5_extents(file, a.dataset, progress, out);
    if (!a.offsets.empty()) return ranges::npy_extents(a.offsets, progress, out);
    ranges::DataFile data;
    if (auto f = data.open(file); !f.message.empty()) return f;
    return ranges::fixed_extents(file, data.size, a.header_bytes, a.record_bytes, out);
}

// The manifest's text goes out in pieces, never whole: for 14.2M samples
// it is 515 MB, which held whole (and grown) took the command to 1.1 GB.
int output(const RangesArgs& a, const layout::Ranges& manifest, const std::string& comment) {
    if (!a.out.empty()) {
        auto f = ranges::write_manifest(a.out, [&](const ranges::WritePiece& write) {
            return layout::format_ranges(manifest, comment, write);
        });
        return f.message.empty() ? exit_ok : ranges_failed(f);
    }
    bool ok = layout::format_ranges(manifest, comment, [](std::string_view piece) {
        return fwrite(piece.data(), 1, piece.size(), stdout) == piece.size();
    });
    if (!ok || fflush(stdout) != 0)
        return ranges_failed(
            ranges::failure(std::string("cannot write standard output: ") + strerror(errno)));
    return exit_ok;
}

// ROOT when --root is not given: the directory a user registers, holding
// the data file (for an LMDB, the environment's directory).
std::string default_root(const RangesArgs& a) {
    if (a.kind == "lmdb") return a.source;
    size_t slash = a.source.find_last_of('/');
    return slash == std::string::npos ? "." : a.source.substr(0, slash + 1);
}

layout::Ranges manifest_of(const std::vector<ranges::Extent>& extents, const std::string& path,
                           uint64_t& bytes) {
    layout::Ranges manifest;
    manifest.entries.reserve(extents.size());
    for (const ranges::Extent& e : extents) {
        layout::add_range(manifest, path, e.offset, static_cast<uint32_t>(e.length));
        bytes += e.length;
    }
    return manifest;
}

int run(const RangesArgs& a) {
    std::string file = a.kind == "lmdb" ? a.source + "/data.mdb" : a.source;
    std::string root = a.root.empty() ? default_root(a) : a.root;
    std::string path;
    if (auto f = ranges::manifest_path(file, root, path); !f.message.empty()) return ranges_failed(f);

    ranges::Progress progress(isatty(STDERR_FILENO));
    std::vector<ranges::Extent> extents;
    if (auto f = collect(a, file, progress, extents); !f.message.empty()) return ranges_failed(f);
    ranges::DataFile data;
    if (auto f = data.open(file); !f.message.empty()) return ranges_failed(f);
    if (auto f = ranges::check_extents(file, extents, data.size); !f.message.empty())
        return ranges_failed(f);

    uint64_t bytes = 0;
    layout::Ranges manifest = manifest_of(extents, path, bytes);
    std::vector<ranges::Extent>().swap(extents);
    if (int rv = output(a, manifest, provenance(a, root)); rv != exit_ok) return rv;
    progress.finish("clairfs ranges: " + std::to_string(manifest.entries.size()) +
                    " samples in " + file + ", " + std::to_string(bytes) + " bytes");
    return exit_ok;
}

} // namespace

int ranges_command(const std::vector<std::string>& args) {
    RangesArgs a;
    if (auto why = parse_ranges_args(args, a); !why.empty()) return ranges_usage_error(a.kind, why);
    if (a.help) {
        print_ranges_help(find_kind(a.kind));
        return exit_ok;
    }
    for (const auto& why :
         {complete(a), parse_size("--record-size", a.record_size, false, a.record_bytes),
          parse_size("--header", a.header, true, a.header_bytes)})
        if (!why.empty()) return ranges_usage_error(a.kind, why);
    return run(a);
}

} // namespace clairfs::cli
