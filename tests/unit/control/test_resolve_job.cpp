// SPDX-License-Identifier: MIT
// resolve_job: a registration against a mount's index.
#include "clairfs/control/registration.hpp"
#include "control_text.hpp"
#include "raw_tree_builder.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using namespace clairfs::test;
using control::Registration;

namespace {

index::Index sample_index() {
    return index::Index::build(
        tree(entries(dir("train", entries(dir("cat", entries(file("1.jpg", 10), file("2.jpg", 20))),
                                          dir("dog", entries(file("3.jpg", 30))))),
                     dir("empty"), file("list.txt", 5), file("readme.jpg", 1))));
}

std::string resolve(std::string_view text, plan::Job& job, std::string_view manifest = "") {
    static const index::Index idx = sample_index();
    return control::resolve_job(parsed(text), idx, std::string(manifest), job);
}

bool mentions(const std::string& why, std::string_view part) {
    return why.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a registration becomes a job over the dataset the layout finds") {
    plan::Job job;
    REQUIRE(resolve(R"({"root": "train", "seed": 3, "batch_size": 2, "n": 3})", job) == "");
    CHECK(job.dataset.samples.size() == 3);
    CHECK(job.dataset.classes == std::vector<std::string>{"cat", "dog"});
    CHECK(job.root == "train");
    CHECK(job.spec.seed == 3);
    CHECK(job.spec.batch_size == 2);
    CHECK(job.ranks == std::vector<uint32_t>{0});

    REQUIRE(resolve(R"({"root": "train", "sampler": "distributed", "world_size": 4,
                        "ranks": [2, 3]})",
                    job) == "");
    CHECK(job.ranks == std::vector<uint32_t>{2, 3});
    CHECK(job.spec.world_size == 4);

    REQUIRE(resolve(R"({"layout": "sorted"})", job) == "");
    CHECK(job.dataset.samples.size() == 5); // every regular file below the root

    REQUIRE(resolve(R"({"root": "train", "layout": "list", "manifest": "list.txt"})", job,
                    "cat/2.jpg\ndog/3.jpg\n") == "");
    CHECK(job.dataset.samples.size() == 2);
}

TEST_CASE("a root that is not a directory of the mount is refused") {
    plan::Job job;
    CHECK(mentions(resolve(R"({"root": "val"})", job), "dataset root 'val'"));
    CHECK(mentions(resolve(R"({"root": "list.txt"})", job), "not a directory"));
    CHECK(mentions(resolve(R"({"root": "../x"})", job), "dataset root"));
    CHECK(mentions(resolve(R"({"root": "empty"})", job), ""));
    CHECK(resolve(R"({"root": "empty"})", job) != "");
}

TEST_CASE("a count other than n is refused naming both counts") {
    plan::Job job;
    std::string why = resolve(R"({"root": "train", "n": 4})", job);
    CHECK(mentions(why, "3 samples"));
    CHECK(mentions(why, "n is 4"));
}

TEST_CASE("a manifest naming a missing file is refused") {
    plan::Job job;
    CHECK(mentions(resolve(R"({"root": "train", "layout": "list", "manifest": "list.txt"})", job,
                           "cat/1.jpg\ncat/9.jpg\n"),
                   "cat/9.jpg"));
}

TEST_CASE("num_samples and the sampler's own checks see the real sample count") {
    plan::Job job;
    CHECK(resolve(R"({"root": "train", "replacement": true, "num_samples": 100})", job) == "");
    CHECK(job.spec.num_samples == 100u);
}
