// SPDX-License-Identifier: MIT
// The order a tf.data pipeline opens its files in, epoch by epoch
// (framework tensorflow). Verified against TensorFlow 2.21 and Keras 3.15.1
// (tests/order/test_tf_order.py).
//
// image_dataset_from_directory(seed=S): the listing (layout keras_directory)
// shuffled by numpy's RandomState(S), then the validation split (training =
// the first n - int(v * n), validation = the rest); Keras >= 3.3.3 shuffles
// those paths with ds.shuffle(8 * batch_size, seed=S) before map(load), so
// files are opened in the tf.data shuffle's order, new every iterator. Older
// Keras maps first: files are opened in the numpy order, every epoch alike.
// seed=None: S = np.random.randint(1e6), known after set_random_seed(G).
//
// list_files(pattern, seed=S): the sorted matches (layout glob), then
// shuffle(n, seed=S); a pipeline shuffling the unshuffled list with another
// buffer is the same with shuffle_buffer.
//
// Which iterator an epoch runs depends on the caller: a plain loop creates
// one per epoch (k = e), Keras 3.15's fit one more at each epoch's end
// (k = 2e). Epoch e uses k = e unless follow() says otherwise.
#pragma once

#include "clairfs/order/job_spec.hpp"
#include "clairfs/order/tf_seed.hpp"
#include "clairfs/order/tf_shuffle.hpp"

#include <optional>
#include <span>
#include <vector>

namespace clairfs::order {

// Whether a job's files come in an order that depends on the tf.data
// iterator: a reshuffling shuffle before the map that reads them (Keras
// 3.3.3 and later, list_files), and not subset="both"'s validation dataset,
// which Keras builds with shuffle=False. Only such an order can be searched.
bool tf_reads_by_iterator(const JobSpec& spec);

class TfEpochs {
public:
    // `spec` must have passed validate(spec, n) with framework tensorflow.
    TfEpochs(const JobSpec& spec, uint32_t n);

    // Which iterator the next epoch uses, and how k moves on after it.
    struct Cursor {
        uint64_t k = 0;
        uint64_t step = 1;
        std::optional<uint64_t> previous; // k of the epoch produced last
    };
    const Cursor& cursor() const { return cursor_; }
    void set_cursor(const Cursor& c) { cursor_ = c; }

    // The next epoch's files (sample indices), in the order they are opened.
    void next(std::vector<Sample>& out);

    // Whether the order depends on the iterator: a reshuffling tf.data
    // shuffle reads the files. If so, iterator k's order is that of
    // shuffle().run(input(), buffer(), tf_iterator_seeds(seeds(), k), ...).
    bool by_iterator() const { return by_iterator_ && seeds_.has_value(); }
    std::span<const Sample> input() const { return input_; }
    uint64_t buffer() const { return buffer_; }
    const TfSeeds& seeds() const { return *seeds_; }

private:
    std::vector<Sample> input_;    // what the shuffle reads: listing, numpy order, subset
    std::optional<TfSeeds> seeds_; // the shuffle's pair; nullopt without a shuffle
    uint64_t buffer_ = 1;
    bool by_iterator_ = false; // tf_reads_by_iterator(spec)
    Cursor cursor_;
    TfShuffle shuffle_;
};

} // namespace clairfs::order
