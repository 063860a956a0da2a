// SPDX-License-Identifier: MIT
// An HDF5 dataset's samples: its rows along the first axis, where they lie
// as stored bytes. Contiguous storage holds row i at the dataset's address
// plus i rows; chunked storage holds it in its chunk, at the chunk's address
// plus its place in the chunk, when each chunk is a run of whole rows stored
// unfiltered. Anything else (compressed or filtered chunks, compact or
// virtual layout, external files, variable-length types) keeps the rows'
// bytes somewhere other than in place, and is refused with its reason.
#include "ranges_writers.hpp"

#include <algorithm>
#include <hdf5.h>
#include <tuple>

namespace clairfs::ranges {
namespace {

class Handle {
public:
    Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
        if (id_ >= 0) close_(id_);
    }
    hid_t get() const { return id_; }
    bool ok() const { return id_ >= 0; }

private:
    hid_t id_;
    herr_t (*close_)(hid_t);
};

const std::string resave =
    "; re-save it uncompressed and contiguous (h5py: create_dataset(..., data=x) with no "
    "chunks or compression)";

struct Shape {
    std::vector<hsize_t> dims;
    uint64_t row_bytes = 0;
};

class Rows {
public:
    Rows(std::string file, std::string name) : file_(std::move(file)), name_(std::move(name)) {}

    Failure run(Progress& progress, std::vector<Extent>& out) {
        DataFile data;
        if (auto fail = data.open(file_); !fail.message.empty()) return fail;
        // HDF5 prints its error stack on every failed call; the failures
        // here are answered with one line of our own.
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        Handle f(H5Fopen(file_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
        if (!f.ok())
            return refused("libhdf5 cannot open " + file_ +
                           " (not an HDF5 file, damaged, or locked by a writer)");
        Handle d(H5Dopen2(f.get(), name_.c_str(), H5P_DEFAULT), H5Dclose);
        if (!d.ok()) return missing(f.get());
        Shape shape;
        if (auto fail = read_shape(d.get(), shape); !fail.message.empty()) return fail;
        Handle dcpl(H5Dget_create_plist(d.get()), H5Pclose);
        if (!dcpl.ok()) return failure(what() + ": cannot read its creation properties");
        if (auto fail = rows(f.get(), d.get(), dcpl.get(), shape, progress, out);
            !fail.message.empty())
            return fail;
        if (auto fail = check_row(data.fd, d.get(), shape, 0, out); !fail.message.empty())
            return fail;
        return check_row(data.fd, d.get(), shape, out.size() - 1, out);
    }

private:
    std::string what() const { return file_ + ": dataset '" + name_ + "'"; }

    Failure missing(hid_t f) const {
        // H5Lexists fails, rather than answering no, when a group on the
        // path is missing: either way there is no such dataset.
        if (H5Lexists(f, name_.c_str(), H5P_DEFAULT) <= 0)
            return refused(file_ + " has no dataset '" + name_ + "'");
        return refused(what() + " is not a dataset (a group?)");
    }

    Failure read_shape(hid_t d, Shape& shape) const {
        Handle type(H5Dget_type(d), H5Tclose);
        Handle space(H5Dget_space(d), H5Sclose);
        if (!type.ok() || !space.ok()) return failure(what() + ": cannot read its type");
        if (H5Tis_variable_str(type.get()) > 0 || H5Tdetect_class(type.get(), H5T_VLEN) > 0)
            return refused(what() + " has a variable-length type: its rows hold references to "
                                    "the data, not the data");
        int ndims = H5Sget_simple_extent_ndims(space.get());
        if (ndims < 1) return refused(what() + " is a scalar: it has no rows");
        shape.dims.resize(static_cast<size_t>(ndims));
        H5Sget_simple_extent_dims(space.get(), shape.dims.data(), nullptr);
        if (shape.dims[0] == 0) return refused(what() + " has no rows");
        uint64_t row = H5Tget_size(type.get());
        for (size_t k = 1; k < shape.dims.size(); ++k) {
            if (shape.dims[k] != 0 && row > UINT64_MAX / shape.dims[k])
                return refused(what() + ": a row is 16 EiB or more");
            row *= shape.dims[k];
        }
        if (row == 0) return refused(what() + ": its rows are empty");
        shape.row_bytes = row;
        return {};
    }

    Failure rows(hid_t f, hid_t d, hid_t dcpl, const Shape& shape, Progress& progress,
                 std::vector<Extent>& out) const {
        if (H5Pget_external_count(dcpl) > 0)
            return refused(what() + " is stored in external files" + resave);
        switch (H5Pget_layout(dcpl)) {
        case H5D_CONTIGUOUS: return contiguous(d, shape, progress, out);
        case H5D_CHUNKED: return chunked(d, dcpl, chunk_base(f), shape, progress, out);
        case H5D_COMPACT:
            return refused(what() + " has compact layout: its rows are in the object header" +
                           resave);
        case H5D_VIRTUAL:
            return refused(what() + " is a virtual dataset: its rows are in other datasets" +
                           resave);
        default: return failure(what() + ": cannot read its layout");
        }
    }

    Failure contiguous(hid_t d, const Shape& shape, Progress& progress,
                       std::vector<Extent>& out) const {
        // The address is absolute, the user block (if any) included.
        haddr_t at = H5Dget_offset(d);
        if (at == HADDR_UNDEF)
            return refused(what() + " has no storage allocated (it was never written)");
        for (hsize_t i = 0; i < shape.dims[0]; ++i) {
            out.push_back({at + i * shape.row_bytes, shape.row_bytes});
            progress.add();
        }
        return {};
    }

    // What to add to a chunk's address to make it a file offset. Up to HDF5
    // 1.14.3, H5Dget_chunk_info_by_coord's addresses are relative to the
    // file's base address, which a user block moves (h5py's userblock_size);
    // 1.14.4 made them absolute (HDFGroup/hdf5#4236), as H5Dget_offset's
    // always were. The library that runs decides, not the headers.
    static hsize_t chunk_base(hid_t f) {
        unsigned major = 0, minor = 0, release = 0;
        H5get_libversion(&major, &minor, &release);
        if (std::tie(major, minor, release) >= std::make_tuple(1u, 14u, 4u)) return 0;
        Handle fcpl(H5Fget_create_plist(f), H5Pclose);
        hsize_t user_block = 0;
        if (fcpl.ok()) H5Pget_userblock(fcpl.get(), &user_block);
        return user_block;
    }

    Failure chunked(hid_t d, hid_t dcpl, hsize_t base, const Shape& shape, Progress& progress,
                    std::vector<Extent>& out) const {
        if (int n = H5Pget_nfilters(dcpl); n != 0) return filtered(dcpl, n);
        std::vector<hsize_t> chunk(shape.dims.size());
        if (H5Pget_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()) < 0)
            return failure(what() + ": cannot read its chunk shape");
        for (size_t k = 1; k < chunk.size(); ++k)
            if (chunk[k] != shape.dims[k])
                return refused(what() + ": chunks of " + tuple(chunk) + " split the rows of " +
                               tuple(shape.dims) + "; each chunk must hold whole rows" + resave);
        std::vector<hsize_t> coord(shape.dims.size(), 0);
        for (hsize_t first = 0; first < shape.dims[0]; first += chunk[0]) {
            coord[0] = first;
            unsigned mask = 0;
            haddr_t at = HADDR_UNDEF;
            hsize_t bytes = 0;
            if (H5Dget_chunk_info_by_coord(d, coord.data(), &mask, &at, &bytes) < 0)
                return failure(what() + ": cannot read the chunk of row " +
                               std::to_string(first));
            if (at == HADDR_UNDEF)
                return refused(what() + ": the chunk of row " + std::to_string(first) +
                               " was never written (no storage allocated)");
            if (bytes != chunk[0] * shape.row_bytes)
                return failure(what() + ": the chunk of row " + std::to_string(first) +
                               " is " + std::to_string(bytes) + " bytes, not " +
                               std::to_string(chunk[0]) + " rows");
            hsize_t end = std::min<hsize_t>(first + chunk[0], shape.dims[0]);
            for (hsize_t i = first; i < end; ++i) {
                out.push_back({base + at + (i - first) * shape.row_bytes, shape.row_bytes});
                progress.add();
            }
        }
        return {};
    }

    Failure filtered(hid_t dcpl, int n) const {
        char name[64] = "";
        unsigned flags = 0, config = 0;
        size_t nvalues = 0;
        H5Pget_filter2(dcpl, 0, &flags, &nvalues, nullptr, sizeof name, name, &config);
        return refused(what() + " is compressed or filtered (" + std::to_string(n) +
                       " filter" + (n == 1 ? "" : "s") + ", first '" + name +
                       "'): its rows are not stored as bytes" + resave);
    }

    // Row i read through HDF5 in its file type (no conversion), against
    // the bytes at out[i].
    Failure check_row(int fd, hid_t d, const Shape& shape, uint64_t i,
                      const std::vector<Extent>& out) const {
        Handle type(H5Dget_type(d), H5Tclose);
        Handle space(H5Dget_space(d), H5Sclose);
        std::vector<hsize_t> start(shape.dims.size(), 0), count = shape.dims;
        start[0] = i;
        count[0] = 1;
        Handle mem(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                   H5Sclose);
        std::string row(shape.row_bytes, '\0');
        if (!type.ok() || !space.ok() || !mem.ok() ||
            H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                                nullptr) < 0 ||
            H5Dread(d, type.get(), mem.get(), space.get(), H5P_DEFAULT, row.data()) < 0)
            return failure(what() + ": cannot read row " + std::to_string(i));
        return check_bytes(fd, file_, i, out[i], row.data());
    }

    static std::string tuple(const std::vector<hsize_t>& v) {
        std::string s = "(";
        for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
        return s + ")";
    }

    std::string file_, name_;
};

} // namespace

Failure hdf5_extents(const std::string& file, const std::string& dataset, Progress& progress,
                     std::vector<Extent>& out) {
    return Rows(file, dataset).run(progress, out);
}

} // namespace clairfs::ranges
