// SPDX-License-Identifier: MIT
// Recognising an unregistered tf.data job from its first opens (issue 47,
// item 3): which image_dataset_from_directory or list_files pipeline, with a
// listed seed, makes the files opened so far the first ones it reads.
//
// tf.data opens from a pool of threads, and which thread opens a file
// says nothing of which iterator it serves (the threads are shared). The
// evidence is the distinct files in the order they were opened: the i-th
// one opened lies within the first i + 1 + behind positions of its
// iterator's order, behind being as many positions as tf.data may still
// have in flight (the tracker's own tolerance). The opens that fit a
// candidate from the first on are its run; an iterator ended early (a
// Keras preview, `take(1)`) ends the true one's run, and the next
// iterator's opens fit no more. A candidate's order is computed for those
// positions only: the tf.data shuffle's prefix costs O(buffer + M +
// behind), never an epoch.
#pragma once

#include "clairfs/order/job_detect.hpp"
#include "clairfs/order/job_spec.hpp"
#include "clairfs/order/tf_seed.hpp"

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace clairfs::order {

// How the candidate dataset numbers its files: Keras's index_directory
// (layout keras_directory) or list_files's sorted matches (layout glob).
enum class TfListing { keras_directory, glob };

struct TfDetectOptions {
    // Seeds tried as op seed, as global seed with seed=None, and as both.
    std::vector<uint64_t> seeds{0, 1, 42, 123, 1234, 2021, 3407, 12345};
    // image_dataset_from_directory's batch_size, most common first; its
    // shuffle buffer is 8 * batch_size.
    std::vector<uint32_t> batch_sizes{32, 64, 128, 16, 256, 512, 8};
    // validation_split values tried, with subset training (or both: the
    // training dataset reads the same) and subset validation.
    std::vector<double> validation_splits{0.2, 0.1, 0.25, 0.3};
    // Iterators 0 .. iterators - 1 of the dataset (Keras previews and fit
    // make more than one per epoch).
    uint32_t iterators = 8;
    // Cores of the machine, for how far behind tf.data's opens may lag
    // (0: this machine's).
    uint32_t cores = 0;
    // Shuffle steps (buffer fills and outputs) the whole search may spend.
    uint64_t max_steps = uint64_t{1} << 28;
    // Accepted only if a wrong candidate explains the opens with at most
    // this probability, over all candidates the search may try.
    double false_accept = 1e-9;
    const std::atomic<bool>* cancel = nullptr;
};

struct TfDetectedJob {
    // framework tensorflow with pipeline, seed (or seed_none and
    // global_seed), batch_size, validation_split, subset, keras_version.
    JobSpec spec;
    uint64_t iterator = 0;      // k of the iterator the first opens came from
    uint64_t last_iterator = 0; // and of the one the latest came from
    uint64_t opens = 0;         // the opens its iterators' runs explain
};

struct TfDetectStats {
    uint64_t candidates = 0; // orders computed
    uint64_t steps = 0;      // shuffle steps spent on them
    // A candidate fits every open but the opens are too few to tell it
    // from chance: how many distinct opens would be enough (0: none fits).
    uint64_t opens_needed = 0;
};

// The pipeline whose iterators' first files are the files opened, or
// nullopt. `opened`: samples in the order opened (as many as the caller
// judges; a file opened again belongs to a later iterator). The opens are
// explained as consecutive runs, each the first files of one iterator, the
// next iterator's after it (Keras previews, `take(1)`, end an iterator
// after a batch; fit's validation pass and the next epoch start another);
// in-flight opens of the iterator before that come late are passed over.
// n: the candidate dataset's file count, numbered as `listing` lists
// them. The first seed (most likely first) with a pipeline that fits
// decides; among its pipelines the one explaining most opens wins, then
// the one that puts them earliest (the true one leaves only tf.data's
// in-flight gaps).
std::optional<TfDetectedJob> detect_tf_job(uint32_t n, TfListing listing,
                                           std::span<const Sample> opened,
                                           const TfDetectOptions& opt, TfDetectStats& stats);

// The first `count` outputs of shuffle(n) over 0..n-1 (list_files' order
// of iterator `seeds`): with the buffer holding the whole input the
// shuffle is a forward Fisher-Yates, kept sparse, so O(count), not O(n).
void tf_full_shuffle_prefix(uint32_t n, const TfSeeds& seeds, size_t count,
                            std::vector<Sample>& out);

} // namespace clairfs::order
