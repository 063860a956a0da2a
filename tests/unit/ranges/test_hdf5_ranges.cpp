// SPDX-License-Identifier: MIT
// clairfs ranges hdf5 against files libhdf5 itself writes: every extent's
// bytes are the row H5Dread returns, for contiguous and row-chunked storage,
// with and without a user block; the layouts whose rows are not bytes in
// place are refused.
#include "ranges/ranges_writers.hpp"
#include "ranges_fixtures.hpp"

#include <hdf5.h>

using namespace clairfs;
using namespace clairfs::test;

namespace {

// Datasets of (rows, 3, 5) uint16 with random contents.
constexpr hsize_t rows = 100;
constexpr hsize_t row_bytes = 3 * 5 * 2;

struct H5File {
    hid_t id;
    explicit H5File(const fs::path& path, hsize_t user_block = 0) {
        hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
        if (user_block) H5Pset_userblock(fcpl, user_block);
        id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
        H5Pclose(fcpl);
        REQUIRE(id >= 0);
    }
    ~H5File() { H5Fclose(id); }

    // Creates `name` with the creation properties `dcpl` (H5P_DEFAULT:
    // contiguous) and writes it unless `write` is false.
    void dataset(const char* name, hid_t dcpl, bool write = true, hsize_t n = rows) {
        hsize_t dims[3] = {n, 3, 5};
        hid_t space = H5Screate_simple(3, dims, nullptr);
        hid_t d = H5Dcreate2(id, name, H5T_STD_U16LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        REQUIRE(d >= 0);
        if (write) {
            // Seeded by name: a row found in the wrong dataset differs.
            std::mt19937_64 rng(std::hash<std::string>{}(name));
            std::string data = random_bytes(rng, n * row_bytes);
            REQUIRE(H5Dwrite(d, H5T_STD_U16LE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
        }
        H5Dclose(d);
        H5Sclose(space);
    }
};

hid_t chunks(hsize_t c0, hsize_t c1 = 3, hsize_t c2 = 5) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t c[3] = {c0, c1, c2};
    H5Pset_chunk(dcpl, 3, c);
    return dcpl;
}

// Row i as libhdf5 reads it, in the file's type.
std::string h5_row(const fs::path& path, const char* name, hsize_t i) {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    hid_t space = H5Dget_space(d);
    hsize_t start[3] = {i, 0, 0}, count[3] = {1, 3, 5};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    hid_t mem = H5Screate_simple(3, count, nullptr);
    std::string row(row_bytes, '\0');
    REQUIRE(H5Dread(d, H5T_STD_U16LE, mem, space, H5P_DEFAULT, row.data()) >= 0);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
    return row;
}

ranges::Failure extents_of(const fs::path& file, const char* name,
                           std::vector<ranges::Extent>& out) {
    ranges::Progress quiet(false);
    return ranges::hdf5_extents(file.string(), name, quiet, out);
}

void check_rows(const fs::path& file, const char* name) {
    std::vector<ranges::Extent> out;
    REQUIRE(extents_of(file, name, out).message == "");
    REQUIRE(out.size() == rows);
    CHECK(ranges::check_extents(file.string(), out, fs::file_size(file)).message == "");
    for (hsize_t i = 0; i < rows; ++i) {
        CHECK(out[i].length == row_bytes);
        CHECK(bytes_at(file, out[i]) == h5_row(file, name, i));
    }
}

ranges::Failure refusal(const fs::path& file, const char* name) {
    std::vector<ranges::Extent> out;
    auto f = extents_of(file, name, out);
    CHECK(f.usage);
    return f;
}

} // namespace

TEST_CASE("hdf5: rows of contiguous and row-chunked datasets") {
    DiskTree t;
    for (hsize_t user_block : {0, 512}) {
        CAPTURE(user_block);
        fs::path file = t.root / ("train" + std::to_string(user_block) + ".h5");
        {
            H5File f(file, user_block);
            f.dataset("contiguous", H5P_DEFAULT);
            hid_t dcpl = chunks(7); // 100 rows: the last chunk is partly used
            f.dataset("chunked", dcpl);
            H5Pclose(dcpl);
            H5Gclose(H5Gcreate2(f.id, "train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            f.dataset("train/x", H5P_DEFAULT);
        }
        check_rows(file, "contiguous");
        check_rows(file, "chunked");
        check_rows(file, "train/x");
    }
}

TEST_CASE("hdf5: refusals name the reason") {
    DiskTree t;
    fs::path file = t.root / "bad.h5";
    {
        H5File f(file);
        hid_t dcpl = chunks(10);
        H5Pset_deflate(dcpl, 4);
        f.dataset("gzip", dcpl);
        H5Pclose(dcpl);
        dcpl = chunks(10, 3, 2);
        f.dataset("split_rows", dcpl);
        H5Pclose(dcpl);
        dcpl = chunks(10);
        f.dataset("unwritten_chunks", dcpl, false);
        H5Pclose(dcpl);
        f.dataset("unwritten", H5P_DEFAULT, false);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_layout(dcpl, H5D_COMPACT);
        f.dataset("compact", dcpl, true, 4);
        H5Pclose(dcpl);
        dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_external(dcpl, (t.root / "elsewhere.bin").c_str(), 0, H5F_UNLIMITED);
        f.dataset("external", dcpl);
        H5Pclose(dcpl);
        hid_t str = H5Tcopy(H5T_C_S1);
        H5Tset_size(str, H5T_VARIABLE);
        hsize_t n = 3;
        hid_t space = H5Screate_simple(1, &n, nullptr);
        H5Dclose(H5Dcreate2(f.id, "strings", str, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5Sclose(space);
        space = H5Screate(H5S_SCALAR);
        H5Dclose(H5Dcreate2(f.id, "scalar", H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT));
        H5Sclose(space);
        H5Tclose(str);
        H5Gclose(H5Gcreate2(f.id, "group", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    }
    auto says = [&](const char* name, const char* why) {
        CAPTURE(name);
        std::string message = refusal(file, name).message;
        CAPTURE(message);
        CHECK(message.find(why) != std::string::npos);
    };
    says("gzip", "compressed or filtered (1 filter, first 'deflate')");
    says("split_rows", "chunks of (10, 3, 2) split the rows of (100, 3, 5)");
    says("unwritten_chunks", "the chunk of row 0 was never written");
    says("unwritten", "no storage allocated");
    says("compact", "compact layout");
    says("external", "external files");
    says("strings", "variable-length type");
    says("scalar", "is a scalar");
    says("missing", "has no dataset 'missing'");
    says("no/such/path", "has no dataset 'no/such/path'");
    says("group", "is not a dataset");

    write_bytes(t.root / "not.h5", std::string(4096, 'x'));
    CHECK(refusal(t.root / "not.h5", "x").message.find("not an HDF5 file") != std::string::npos);
    std::vector<ranges::Extent> out;
    auto f = extents_of(t.root / "absent.h5", "x", out);
    CHECK_FALSE(f.usage);
    CHECK(f.message.find("cannot open") != std::string::npos);
}
