// SPDX-License-Identifier: MIT
#include "clairfs/order/tf_epochs.hpp"

#include "clairfs/order/numpy_random.hpp"

#include <numeric>

namespace clairfs::order {
namespace {

// The seed image_dataset_from_directory uses for numpy and as op seed.
uint32_t keras_seed(const JobSpec& s) {
    if (!s.seed_none) return static_cast<uint32_t>(s.seed);
    return numpy_randint(static_cast<uint32_t>(s.global_seed->value), 1000000);
}

// paths[:-v] and paths[-v:] for v = int(split * n); -0 is the whole list.
void split(std::vector<Sample>& list, double fraction, TfSubset subset) {
    auto val = static_cast<size_t>(fraction * static_cast<double>(list.size()));
    if (subset == TfSubset::training)
        list.resize(list.size() - val);
    else if (val > 0)
        list.erase(list.begin(), list.end() - static_cast<ptrdiff_t>(val));
}

} // namespace

bool tf_reads_by_iterator(const JobSpec& s) {
    return s.framework == Framework::tensorflow && s.shuffle &&
           s.subset != TfSubset::validation_of_both &&
           (s.pipeline == TfPipeline::list_files || s.keras_version == KerasVersion::v3);
}

TfEpochs::TfEpochs(const JobSpec& s, uint32_t n) : input_(n), by_iterator_(tf_reads_by_iterator(s)) {
    std::iota(input_.begin(), input_.end(), Sample{0});
    if (s.pipeline == TfPipeline::list_files) {
        buffer_ = s.shuffle_buffer.value_or(n);
        if (s.shuffle) {
            std::optional<Seed> op;
            if (!s.seed_none) op = Seed{s.seed, s.seed_negative};
            seeds_ = tf_get_seed(s.global_seed, op);
        }
        return;
    }
    buffer_ = s.shuffle_buffer.value_or(uint64_t{8} * s.batch_size);
    if (s.shuffle) {
        uint32_t seed = keras_seed(s);
        numpy_shuffle(seed, input_);
        seeds_ = tf_get_seed(s.global_seed, Seed{seed, false});
    }
    if (s.validation_split) split(input_, *s.validation_split, s.subset);
}

void TfEpochs::next(std::vector<Sample>& out) {
    if (by_iterator())
        shuffle_.run(input_, buffer_, tf_iterator_seeds(*seeds_, cursor_.k), input_.size(), out);
    else
        out.assign(input_.begin(), input_.end());
    cursor_.previous = cursor_.k;
    cursor_.k += cursor_.step;
}

} // namespace clairfs::order
