// SPDX-License-Identifier: MIT
// registration_json writes every key, and parse_control reads it back to
// the same registration.
#include "clairfs/control/registration.hpp"
#include "control_text.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace clairfs;
using control::ControlRequest;
using control::Registration;

using test::parsed;

namespace {

void check_same(const Registration& a, const Registration& b) {
    const order::JobSpec &x = a.spec, &y = b.spec;
    CHECK(x.seed == y.seed);
    CHECK(x.seed_negative == y.seed_negative);
    CHECK(x.sampler == y.sampler);
    CHECK(x.generator == y.generator);
    CHECK(x.epochs == y.epochs);
    CHECK(x.start_epoch == y.start_epoch);
    CHECK(x.world_size == y.world_size);
    CHECK(x.shuffle == y.shuffle);
    CHECK(x.sampler_drop_last == y.sampler_drop_last);
    CHECK(x.drop_last == y.drop_last);
    CHECK(x.batch_size == y.batch_size);
    CHECK(x.num_workers == y.num_workers);
    CHECK(x.prefetch_factor == y.prefetch_factor);
    CHECK(x.persistent_workers == y.persistent_workers);
    CHECK(x.pre_draws == y.pre_draws);
    CHECK(x.torch_version == y.torch_version);
    CHECK(x.replacement == y.replacement);
    CHECK(x.num_samples == y.num_samples);
    CHECK(a.epochs_given == b.epochs_given);
    CHECK(a.ranks == b.ranks);
    CHECK(a.root == b.root);
    CHECK(a.layout == b.layout);
    CHECK(a.manifest == b.manifest);
    CHECK(a.n == b.n);
}

} // namespace

TEST_CASE("the JSON of a registration parses back to the same registration") {
    const char* cases[] = {
        R"({})",
        R"({"seed": 42, "batch_size": 256, "num_workers": 8, "root": "train"})",
        R"({"seed": -1, "sampler": "distributed", "world_size": 8, "ranks": [0, 1, 2, 3],
            "shuffle": false, "sampler_drop_last": true, "epochs": 90, "start_epoch": 10,
            "torch_version": "2.7", "layout": "list", "manifest": "train.txt", "n": 1000})",
        R"({"seed": 18446744073709551615, "generator": "explicit", "replacement": true,
            "num_samples": 77, "pre_draws": 110, "drop_last": true, "prefetch_factor": 3,
            "persistent_workers": true, "num_workers": 2, "layout": "sorted"})",
        R"({"sampler": "sequential", "epochs": 1})",
    };
    for (const char* text : cases) {
        ControlRequest req;
        REQUIRE(control::parse_control(text, req) == "");
        Registration first =
            req.unregister ? parsed(R"({"unregister": false})") : req.loaders().front();
        std::string json = control::registration_json(first);
        INFO(json);
        Registration again = parsed(json);
        check_same(first, again);
        CHECK(control::registration_json(again) == json);
    }
}

TEST_CASE("the JSON has every key, in documentation order, pretty-printed") {
    std::string text = control::registration_json(parsed(R"({"seed": -5})"));
    CHECK(text.ends_with("}\n"));
    CHECK(text.find("\n  \"seed\": -5,\n") != std::string::npos);
    auto j = nlohmann::ordered_json::parse(text);
    std::vector<std::string> keys;
    for (auto& [k, v] : j.items()) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"seed",
                                           "sampler",
                                           "generator",
                                           "epochs",
                                           "start_epoch",
                                           "world_size",
                                           "ranks",
                                           "shuffle",
                                           "sampler_drop_last",
                                           "drop_last",
                                           "batch_size",
                                           "num_workers",
                                           "prefetch_factor",
                                           "persistent_workers",
                                           "pre_draws",
                                           "torch_version",
                                           "replacement",
                                           "num_samples",
                                           "root",
                                           "layout",
                                           "manifest",
                                           "n",
                                           "resync_draws",
                                           "pre_draws_max"});
    // Defaults without a number are null.
    CHECK(j["epochs"].is_null());
    CHECK(j["num_samples"].is_null());
    CHECK(j["manifest"].is_null());
    CHECK(j["n"].is_null());
    CHECK(j["ranks"] == nlohmann::ordered_json::array({0}));
    CHECK(j["torch_version"] == "1.13");
}

TEST_CASE("a tensorflow registration: null is None, the layout follows the pipeline, it reads "
          "back unchanged") {
    Registration r = parsed(R"({"framework": "tensorflow", "seed": null, "global_seed": 7,
        "batch_size": 32, "validation_split": 0.2, "subset": "training", "shuffle": false})");
    CHECK(r.spec.framework == order::Framework::tensorflow);
    CHECK(r.spec.seed_none);
    CHECK(r.spec.global_seed->value == 7);
    CHECK(r.spec.validation_split == 0.2);
    CHECK(r.layout == layout::LayoutKind::keras_directory);
    std::string json = control::registration_json(r);
    INFO(json);
    auto j = nlohmann::ordered_json::parse(json);
    CHECK(j["seed"].is_null());
    CHECK(j["layout"] == "keras_directory");
    CHECK(j["validation_split"] == 0.2);
    CHECK_FALSE(j.contains("num_workers")); // PyTorch's keys are not written
    CHECK(control::registration_json(parsed(json)) == json);

    Registration lf = parsed(R"({"framework": "tensorflow", "pipeline": "list_files",
        "pattern": "*/*.jpg", "seed": -4})");
    CHECK(lf.layout == layout::LayoutKind::glob);
    CHECK(control::registration_json(parsed(control::registration_json(lf))) ==
          control::registration_json(lf));

    auto refused = [](std::string_view text) {
        ControlRequest req;
        return control::parse_control(text, req);
    };
    CHECK(refused(R"({"framework": "tensorflow", "num_workers": 4})") ==
          "num_workers is a PyTorch key: framework tensorflow does not take it");
    CHECK(refused(R"({"framework": "tensorflow", "layout": "imagefolder"})")
              .starts_with("layout imagefolder does not fit pipeline"));
    CHECK(refused(R"({"seed": null})").starts_with("seed none needs framework tensorflow"));
    CHECK(refused(R"({"framework": "tensorflow", "seed": null})")
              .starts_with("seed none needs global_seed"));
}
