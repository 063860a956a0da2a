// SPDX-License-Identifier: MIT
// parse_control: every key, PyTorch's defaults, and one case per kind of
// refusal, each with a reason that names what is wrong.
#include "clairfs/control/registration.hpp"
#include "control_text.hpp"

#include <doctest/doctest.h>

using namespace clairfs;
using control::ControlRequest;
using control::parse_control;
using control::Registration;

using test::parsed;
using test::refusal;

namespace {

bool mentions(const std::string& why, std::string_view part) {
    return why.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("an object of defaults is PyTorch's defaults and predicts until the job stops") {
    for (auto text : {R"({"unregister": false})", R"({"seed": 0})"}) {
        Registration r = parsed(text);
        const order::JobSpec& s = r.spec;
        CHECK(s.seed == 0);
        CHECK_FALSE(s.seed_negative);
        CHECK(s.sampler == order::SamplerKind::random);
        CHECK(s.generator == order::GeneratorKind::global);
        CHECK(s.epochs == control::unlimited_epochs);
        CHECK_FALSE(r.epochs_given);
        CHECK(s.start_epoch == 0);
        CHECK(s.world_size == 1);
        CHECK(s.shuffle);
        CHECK_FALSE(s.sampler_drop_last);
        CHECK_FALSE(s.drop_last);
        CHECK(s.batch_size == 1);
        CHECK(s.num_workers == 0);
        CHECK(s.prefetch_factor == 2);
        CHECK_FALSE(s.persistent_workers);
        CHECK(s.pre_draws == 0);
        CHECK(s.torch_version == order::TorchVersion::v1_13);
        CHECK_FALSE(s.replacement);
        CHECK_FALSE(s.num_samples);
        CHECK(r.ranks == std::vector<uint32_t>{0});
        CHECK(r.root == "");
        CHECK(r.layout == layout::LayoutKind::imagefolder);
        CHECK(r.manifest == "");
        CHECK_FALSE(r.n);
    }
}

TEST_CASE("every key is read") {
    Registration r = parsed(R"({
        "seed": -7, "sampler": "distributed", "generator": "explicit", "epochs": 90,
        "start_epoch": 3, "world_size": 8, "ranks": [5, 4], "shuffle": false,
        "sampler_drop_last": true, "drop_last": true, "batch_size": 256, "num_workers": 8,
        "prefetch_factor": 4, "persistent_workers": true, "pre_draws": 110,
        "torch_version": "2.7", "replacement": false, "num_samples": null,
        "root": "./train/", "layout": "list", "manifest": "lists/train.txt", "n": 1281167})");
    const order::JobSpec& s = r.spec;
    CHECK(s.seed == static_cast<uint64_t>(-7));
    CHECK(s.seed_negative);
    CHECK(s.sampler == order::SamplerKind::distributed);
    CHECK(s.generator == order::GeneratorKind::explicit_);
    CHECK(s.epochs == 90);
    CHECK(r.epochs_given);
    CHECK(s.start_epoch == 3);
    CHECK(s.world_size == 8);
    CHECK(r.ranks == std::vector<uint32_t>{4, 5}); // sorted
    CHECK_FALSE(s.shuffle);
    CHECK(s.sampler_drop_last);
    CHECK(s.drop_last);
    CHECK(s.batch_size == 256);
    CHECK(s.num_workers == 8);
    CHECK(s.prefetch_factor == 4);
    CHECK(s.persistent_workers);
    CHECK(s.pre_draws == 110);
    CHECK(s.torch_version == order::TorchVersion::v2_7);
    CHECK_FALSE(s.replacement);
    CHECK(r.root == "train");
    CHECK(r.layout == layout::LayoutKind::list);
    CHECK(r.manifest == "lists/train.txt");
    CHECK(r.n == 1281167u);

    Registration random = parsed(R"({"replacement": true, "num_samples": 10, "layout": "sorted",
                                     "seed": 18446744073709551615, "epochs": null})");
    CHECK(random.spec.replacement);
    CHECK(random.spec.num_samples == 10u);
    CHECK(random.layout == layout::LayoutKind::sorted);
    CHECK(random.spec.seed == UINT64_MAX);
    CHECK_FALSE(random.epochs_given);
}

TEST_CASE("keys may be spelled with dashes, and root with ./ or a trailing slash") {
    Registration r = parsed(R"({"batch-size": 32, "drop-last": true, "root": "a/b//"})");
    CHECK(r.spec.batch_size == 32);
    CHECK(r.spec.drop_last);
    CHECK(r.root == "a/b");
    CHECK(parsed(R"({"root": "."})").root == "");
    CHECK(parsed(R"({"root": "./"})").root == "");
}

TEST_CASE("{} and unregister: true unregister") {
    for (auto text : {"{}", " {}\n", R"({"unregister": true})"}) {
        ControlRequest req;
        CHECK(parse_control(text, req) == "");
        CHECK(req.unregister);
    }
    CHECK(mentions(refusal(R"({"unregister": true, "seed": 1})"), "no other keys"));
    CHECK(mentions(refusal(R"({"unregister": 1})"), "unregister must be true or false"));
}

TEST_CASE("text that is not one JSON object is refused") {
    CHECK(mentions(refusal("seed=42"), "not valid JSON"));
    CHECK(mentions(refusal(R"({"seed": 4)"), "not valid JSON"));
    CHECK(mentions(refusal(R"({"seed": 4)"), "end of input"));
    CHECK(mentions(refusal(""), "not valid JSON"));
    CHECK(mentions(refusal("{}{}"), "not valid JSON"));
    CHECK(mentions(refusal("[1, 2]"), "expected a JSON object"));
    CHECK(mentions(refusal("42"), "expected a JSON object"));
    CHECK(mentions(refusal("null"), "expected a JSON object"));
}

TEST_CASE("unknown keys and rank are refused by name") {
    CHECK(refusal(R"({"bogus": 1})") == "unknown key 'bogus'");
    CHECK(mentions(refusal(R"({"batchsize": 1})"), "unknown key 'batchsize'"));
    CHECK(mentions(refusal(R"({"rank": 0})"), "use ranks"));
    // clairfs order keys that are not about the job's sampling.
    CHECK(mentions(refusal(R"({"paths": true})"), "unknown key"));
    CHECK(mentions(refusal(R"({"worker": 0})"), "unknown key"));
}

TEST_CASE("each key takes one JSON type") {
    CHECK(refusal(R"({"batch_size": "256"})") == "batch_size must be a number");
    CHECK(refusal(R"({"seed": "42"})") == "seed must be a number");
    CHECK(refusal(R"({"batch_size": true})") == "batch_size must be a number");
    CHECK(refusal(R"({"n": "5"})") == "n must be a number");
    CHECK(refusal(R"({"shuffle": 1})") == "shuffle must be true or false");
    CHECK(refusal(R"({"drop_last": "true"})") == "drop_last must be true or false");
    CHECK(refusal(R"({"sampler": 1})") == "sampler must be a string");
    // 2.10 would read as 2.1: versions are strings.
    CHECK(refusal(R"({"torch_version": 2.7})") == "torch_version must be a string");
    CHECK(refusal(R"({"root": ["train"]})") == "root must be a string");
    CHECK(refusal(R"({"layout": null})") == "layout must be a string");
    CHECK(mentions(refusal(R"({"ranks": 0})"), "ranks must be a list of integers"));
    CHECK(mentions(refusal(R"({"ranks": [0, "1"]})"), "ranks must be a list of integers"));
    CHECK(mentions(refusal(R"({"ranks": [-1]})"), "ranks must be a list of integers"));
    CHECK(mentions(refusal(R"({"batch_size": null})"), "batch_size must be a number"));
}

TEST_CASE("values out of range are refused with the range") {
    CHECK(mentions(refusal(R"({"batch_size": 0})"), "invalid value for batch_size: 0"));
    CHECK(mentions(refusal(R"({"batch_size": 1.5})"), "invalid value for batch_size: 1.5"));
    CHECK(mentions(refusal(R"({"batch_size": -1})"), "invalid value for batch_size: -1"));
    CHECK(mentions(refusal(R"({"seed": 42.0})"), "invalid value for seed"));
    CHECK(mentions(refusal(R"({"seed": -9223372036854775809})"), "invalid value for seed"));
    CHECK(mentions(refusal(R"({"seed": 18446744073709551616})"), "invalid value for seed"));
    CHECK(parsed(R"({"seed": -9223372036854775808})").spec.seed_negative);
    CHECK(mentions(refusal(R"({"epochs": 0})"), "invalid value for epochs"));
    CHECK(mentions(refusal(R"({"world_size": 0})"), "invalid value for world_size"));
    CHECK(mentions(refusal(R"({"sampler": "shuffled"})"), "invalid value for sampler"));
    CHECK(mentions(refusal(R"({"torch_version": "3"})"), "invalid value for torch_version"));
    CHECK(mentions(refusal(R"({"layout": "folders"})"), "invalid value for layout: folders"));
    CHECK(mentions(refusal(R"({"n": 0})"), "invalid value for n: 0"));
    CHECK(mentions(refusal(R"({"num_samples": 0})"), "invalid value for num_samples"));
    CHECK(mentions(refusal(R"({"ranks": [16777216]})"), "out of range"));
}

TEST_CASE("keys that do not fit together are refused") {
    CHECK(mentions(refusal(R"({"ranks": []})"), "at least one rank"));
    CHECK(mentions(refusal(R"({"ranks": [0, 0]})"), "rank 0 twice"));
    CHECK(mentions(refusal(R"({"sampler": "distributed", "world_size": 2, "ranks": [2]})"),
                   "rank 2 in ranks is not below world_size 2"));
    CHECK(mentions(refusal(R"({"ranks": [1]})"), "not below world_size 1"));
    CHECK(mentions(refusal(R"({"world_size": 2, "ranks": [0]})"), "needs sampler distributed"));
    CHECK(mentions(refusal(R"({"layout": "list"})"), "layout list needs manifest"));
    CHECK(mentions(refusal(R"({"manifest": "a.txt"})"), "only read with layout list"));
    CHECK(mentions(refusal(R"({"layout": "list", "manifest": "/etc/list"})"),
                   "relative to the mount root"));
    CHECK(mentions(refusal(R"({"root": "/data/train"})"), "relative to the mount root"));
    CHECK(mentions(refusal(R"({"persistent_workers": true})"), "num_workers > 0"));
    CHECK(mentions(refusal(R"({"sampler": "sequential", "num_samples": 5})"),
                   "belong to sampler random"));
    CHECK(parsed(R"({"sampler": "distributed", "world_size": 4, "ranks": [3, 1]})").ranks ==
          std::vector<uint32_t>{1, 3});
}

TEST_CASE("subset both registers the two datasets image_dataset_from_directory returns") {
    ControlRequest req;
    REQUIRE(parse_control(R"({"framework": "tensorflow", "root": "train", "seed": 3,
                              "batch_size": 8, "validation_split": 0.25, "subset": "both"})",
                          req) == "");
    REQUIRE(req.job.loaders.size() == 2);
    CHECK(req.job.listed);
    CHECK(req.job.loaders[0].spec.subset == order::TfSubset::training);
    CHECK(req.job.loaders[1].spec.subset == order::TfSubset::validation_of_both);
    for (const Registration& r : req.job.loaders) {
        CHECK(r.spec.seed == 3);
        CHECK(r.root == "train");
        CHECK(*r.spec.validation_split == 0.25);
    }
    // In a list, only the loader that says both becomes two.
    ControlRequest list;
    REQUIRE(parse_control(R"({"framework": "tensorflow", "seed": 3, "batch_size": 8,
                              "loaders": [{"root": "a", "validation_split": 0.5, "subset": "both"},
                                          {"root": "b"}]})",
                          list) == "");
    REQUIRE(list.job.loaders.size() == 3);
    CHECK(list.job.loaders[2].root == "b");
    CHECK(list.job.loaders[2].spec.subset == order::TfSubset::none);
    // One order is one dataset.
    order::JobSpec s;
    REQUIRE(order::set_job_key(s, "framework", "tensorflow") == "");
    REQUIRE(order::set_job_key(s, "validation_split", "0.5") == "");
    REQUIRE(order::set_job_key(s, "subset", "both") == "");
    CHECK(mentions(order::validate(s, 10), "validation_of_both"));
}

TEST_CASE("pre_draws_max: how far down the chain epoch 0's seed is searched") {
    CHECK(parsed(R"({"seed": 1})").pre_draws_max == plan::deep_chain_words);
    CHECK(parsed(R"({"pre_draws_max": 0})").pre_draws_max == 0);
    CHECK(parsed(R"({"pre-draws-max": 4294967296})").pre_draws_max == (uint64_t{1} << 32));
    ControlRequest req;
    CHECK(parse_control(R"({"pre_draws_max": 4294967297})", req)
              .starts_with("invalid value for pre_draws_max: 4294967297 (expected an integer "
                           "from 0 to 4294967296)"));
    CHECK(parse_control(R"({"pre_draws_max": "5"})", req).find("pre_draws_max") !=
          std::string::npos);
}

TEST_CASE("from_loader is a key of the whole registration") {
    control::ControlRequest req;
    CHECK(control::parse_control(R"({"seed": 1, "from_loader": true})", req).empty());
    CHECK(req.from_loader);
    CHECK(control::parse_control(R"({"from_loader": true})", req) ==
          "from_loader goes with a registration, not on its own");
    CHECK(control::parse_control(R"({"seed": 1, "from_loader": 1})", req) ==
          "from_loader must be true or false");
    CHECK(control::parse_control(R"({"loaders": [{"root": "a", "from_loader": true}]})", req) ==
          "from_loader belongs to the whole registration, not to one loader");
}
