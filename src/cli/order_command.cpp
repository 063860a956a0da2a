// SPDX-License-Identifier: MIT
// `clairfs order`: prints the order in which a job's DataLoader will yield
// its samples, so a registration can be checked before it is written.
#include "clairfs/cli/commands.hpp"
#include "clairfs/order/epoch_orders.hpp"
#include "clairfs/order/worker_split.hpp"
#include "order_args.hpp"
#include "order_dataset.hpp"
#include "order_output.hpp"

#include <cstdio>

namespace clairfs::cli {
namespace {

int order_usage_error(const std::string& why) {
    fprintf(stderr, "clairfs: %s (see clairfs order --help)\n", why.c_str());
    return exit_usage;
}

void print_order_help() {
    printf("usage: clairfs order [KEYS] (--n N | --root DIR [--layout L] [--manifest FILE])\n"
           "                     [--paths | --binary] [--config FILE]\n\n"
           "Prints, one line per epoch, the JSON array of sample indices (or, with --paths,\n"
           "relative paths) that the job's DataLoader yields for one rank, batches\n"
           "concatenated (framework tensorflow: the files in the order the tf.data\n"
           "pipeline opens them, epoch e on the dataset's iterator e). Keys (also the keys of a --config JSON object, with underscores,\n"
           "and of the control file):\n");
    for (const auto& k : order::job_keys()) {
        std::string flag = "--" + std::string(k.name);
        for (char& c : flag)
            if (c == '_') c = '-';
        flag += " " + std::string(k.value_name);
        printf("  %-26s %.*s\n", flag.c_str(), static_cast<int>(k.help.size()), k.help.data());
    }
    printf("dataset:\n"
           "  %-26s %s\n  %-26s %s\n  %-26s %s\n  %-26s %s\n  %-26s %s\n  %-26s %s\n"
           "  %-26s %s\n  %-26s %s\n  %-26s %s\n",
           "--n N", "a dataset of N samples (no files needed)", "--root DIR",
           "the dataset directory, numbered by --layout", "--layout L",
           "imagefolder (torchvision rules), sorted, list or ranges [imagefolder; tensorflow: "
           "keras_directory or glob, by pipeline]",
           "--manifest FILE",
           "list: one relative path per line; ranges: clairfs ranges' output", "--paths",
           "print relative paths instead of indices (ranges: PATH@OFFSET+LENGTH)", "--binary",
           "each epoch as a little-endian uint64 count and that many little-endian uint32 "
           "indices, no newline (for huge n: numpy.fromfile)",
           "--config FILE",
           "a JSON object with the keys above and n, root, layout, manifest", "--worker W",
           "print only what DataLoader worker W opens (batches W, W+num_workers, ...)",
           "--iterator-step S",
           "tensorflow: epoch e runs the dataset's iterator S*e (Keras 3.15 fit: 2) [1]");
}

} // namespace

int order_command(const std::vector<std::string>& args) {
    OrderArgs a;
    if (auto why = parse_order_args(args, a); !why.empty()) return order_usage_error(why);
    if (a.help) {
        print_order_help();
        return exit_ok;
    }
    OrderDataset ds;
    if (auto failure = load_order_dataset(a, ds); !failure.message.empty()) {
        fprintf(stderr, "clairfs: %s\n", failure.message.c_str());
        return failure.usage ? exit_usage : exit_failure;
    }
    if (auto why = order::validate(a.spec, ds.size()); !why.empty()) return order_usage_error(why);

    order::EpochOrders orders(a.spec, static_cast<uint32_t>(ds.size()));
    orders.follow_tf_iterator(0, a.iterator_step);
    LineWriter out(stdout);
    std::vector<order::Sample> epoch, mine;
    for (uint32_t e = 0; e < a.spec.epochs; ++e) {
        orders.next(epoch);
        if (a.worker) {
            order::worker_stream(epoch, a.spec.batch_size, a.spec.num_workers, *a.worker, mine);
            epoch.swap(mine);
        }
        if (a.binary)
            out.binary_indices(epoch);
        else if (a.paths)
            out.paths(epoch, [&](order::Sample s) { return ds.path(s); });
        else
            out.indices(epoch);
        if (!out.flush()) return exit_failure; // the reader went away
    }
    return exit_ok;
}

} // namespace clairfs::cli
