#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An unmodified-style Keras 3 input pipeline, timed per epoch.

    keras_job.py DATA [--epochs 3] [--batch 64] [--seed 0] [--image-size 64]
        [--validation-split F] [--val DIR] [--step-sleep S]
        [--loop-dev loopN] [--cpuacct DIR] [--daemon-pid PID]
        [--wait-for PATH]

What a Keras user writes, with the TensorFlow backend:

    ds = keras.utils.image_dataset_from_directory(DATA, shuffle=True, seed=S,
                                                  batch_size=64, image_size=(64, 64))
    model = keras.Sequential([Rescaling(1/255), Conv2D(8, 3, strides=2),
                              GlobalAveragePooling2D(), Dense(classes)])
    model.compile("adam", SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=3)

Nothing in it knows about clairfs: the data path is the only thing that
changes between scenarios. The model is tiny (a few thousand parameters on
64x64 images), so an epoch costs what reading and decoding the JPEGs costs
(tf.io.read_file + decode_image of the whole photo + resize, in tf.data's
AUTOTUNE map threads), which is what the benchmark measures. The order the
files are read in is keras's (../shared/reference/tf-order.md): the file list
shuffled once with numpy RandomState(S), then tf.data's shuffle with a
buffer of 8 batches, seed S and no global seed (the job does not call
keras.utils.set_random_seed), reshuffled for every iterator fit creates.

--validation-split F: image_dataset_from_directory(..., validation_split=F,
subset="both"): fit(train, validation_data=val), keras's own split of one
directory. --val DIR: a validation dataset from another directory
(shuffle=False), as for a train/val dataset. Either runs keras's validation
pass at the end of every epoch.

--step-sleep S sleeps S seconds after every training batch (a callback),
standing in for a GPU step. --wait-for PATH: after the {"setup_s"} line
(dataset listed, model compiled), wait until PATH exists before fit.

Output, as bench/train_job.py's (bench/scenarios.py reads either): first
{"setup_s", "files", "classes", ...}, then one JSON object per epoch on
stdout, from a keras callback: epoch, samples, steps, wall_s (the training
pass: on_epoch_begin to the last training batch, or to on_test_begin when a
validation pass follows), samples_per_s, first_batch_s (epoch start to the
end of the first training step; in epoch 0 it includes tracing the train
function), shared_fs_bytes/_reads, job_cpu_s, cgroup_cpu_s,
outside_job_cpu_s, others_cpu_s, steal_s, daemon_cpu_s,
daemon_threads_cpu_s (see train_job.py for each), loss; with a validation
pass also val_samples, val_wall_s, val_first_batch_s, epoch_with_val_s,
val_shared_fs_bytes, val_shared_fs_reads. The CPU figures of the job are its
own rusage: tf.data's threads are threads of this process.

Keras >= 3.7's fit creates the next iterator of the training dataset as
soon as an epoch's last batch is taken (tf-order.md), so a little of the
reading that iterator's prefetch does falls in the validation pass or
after the last epoch. That is what a real Keras job does too.

iterator_switch_s: on_epoch_begin to the first training batch's
on_train_batch_begin. fit drops the previous epoch's iterators there, before
it asks for this epoch's first batch, so the interval holds no read of this
epoch. Dropping an exhausted tf.data iterator joins tf.data's autotune
thread, which sleeps in a timed wait that the cancellation does not cut
short (TF 2.21: the main thread blocks in RootDataset::Iterator's
destructor until the autotune thread's Model::OptimizeLoop wakes from its
optimisation period), so the interval is anywhere from 0 to about 16 s,
differently in every run, with or without clairfs. With
tf.data.Options().autotune.enabled = False it is 0 and an epoch takes as
long. wall_less_switch_s = wall_s - iterator_switch_s: the epoch's reading,
decoding and training, which is what a data path can change.

Runs with any Python that has tensorflow and keras 3 (bench/scenarios.py
takes it from CLAIRFS_FRAMEWORKS_PYTHON, default /opt/clairfs-venv/bin/python);
TensorFlow's C++ logging is kept to errors (TF_CPP_MIN_LOG_LEVEL=2) and
keras prints nothing on stdout but the JSON lines.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The figures are measured exactly as the torch job measures them.
from train_job import add_harness_args, epoch_record, snapshot  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--image-size", type=int, nargs="+", default=[64], metavar="PX",
                    help="one side (square) or height width [64]")
    ap.add_argument("--validation-split", type=float, default=0.0, metavar="F",
                    help="keras's own split of DATA: subset='both' [0: none]")
    ap.add_argument("--val", metavar="DIR", help="validation pass over DIR after every epoch")
    add_harness_args(ap, resident=False)
    a = ap.parse_args(argv)
    if len(a.image_size) == 1:
        a.image_size = a.image_size * 2
    if len(a.image_size) != 2 or min(a.image_size) < 1:
        ap.error("--image-size takes one or two positive sizes")
    if not 0.0 <= a.validation_split < 1.0:
        ap.error("--validation-split must be in [0, 1)")
    if a.validation_split and a.val:
        ap.error("--validation-split and --val are two ways of validating: choose one")
    if a.epochs < 1 or a.batch < 1:
        ap.error("--epochs and --batch must be positive")
    return a




def main(argv=None):
    a = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    t_import = time.perf_counter()
    import keras
    import tensorflow as tf
    import_s = time.perf_counter() - t_import

    t0 = time.perf_counter()
    common = dict(labels="inferred", label_mode="int", batch_size=a.batch,
                  image_size=tuple(a.image_size), verbose=False)
    val_ds = None
    if a.validation_split:
        train_ds, val_ds = keras.utils.image_dataset_from_directory(
            a.data, shuffle=True, seed=a.seed, validation_split=a.validation_split,
            subset="both", **common)
    else:
        train_ds = keras.utils.image_dataset_from_directory(
            a.data, shuffle=True, seed=a.seed, **common)
    if a.val:
        val_ds = keras.utils.image_dataset_from_directory(a.val, shuffle=False, **common)
    classes = len(train_ds.class_names)
    n = len(train_ds.file_paths)
    n_val = len(val_ds.file_paths) if val_ds is not None else 0

    model = keras.Sequential([
        keras.Input(shape=(*a.image_size, 3)),
        keras.layers.Rescaling(1.0 / 255),
        keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(classes),
    ])
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    setup = {"setup_s": round(time.perf_counter() - t0, 3), "files": n, "classes": classes,
             "import_s": round(import_s, 3), "framework": "keras",
             "keras": keras.__version__, "tensorflow": tf.__version__,
             "backend": keras.backend.backend()}
    if val_ds is not None:
        setup["val_files"] = n_val
    print(json.dumps(setup), flush=True)

    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.01)

    class Timer(keras.callbacks.Callback):
        """Snapshots at an epoch's start, the end of its training pass (the
        validation pass's start) and its end; one JSON line per epoch."""

        def on_epoch_begin(self, epoch, logs=None):
            self.s0 = snapshot(a)
            self.s_train = None
            self.steps = 0
            self.first = None
            self.switch = None
            self.val = None

        def on_train_batch_begin(self, batch, logs=None):
            # fit drops the previous epoch's exhausted iterator (and its
            # spare) between on_epoch_begin and the first batch's begin;
            # the first batch's data is fetched only after this, inside
            # train_function. So this interval holds tf.data's iterator
            # teardown and no read of this epoch.
            if self.switch is None:
                self.switch = time.perf_counter() - self.s0["t"]

        def on_train_batch_end(self, batch, logs=None):
            if self.first is None:
                self.first = time.perf_counter() - self.s0["t"]
            self.steps += 1
            if a.step_sleep:
                time.sleep(a.step_sleep)

        def on_test_begin(self, logs=None):
            self.s_train = snapshot(a)
            self.val = {"samples": n_val, "first": None}

        def on_test_batch_end(self, batch, logs=None):
            if self.val is not None and self.val["first"] is None:
                self.val["first"] = time.perf_counter() - self.s_train["t"]

        def on_epoch_end(self, epoch, logs=None):
            s_end = snapshot(a)
            s_train = self.s_train or s_end
            samples = min(n, self.steps * a.batch)
            out = epoch_record(a, epoch, samples, self.steps, self.s0, s_train, s_end,
                               self.first, self.val)
            out["iterator_switch_s"] = round(self.switch or 0.0, 3)
            out["wall_less_switch_s"] = round(out["wall_s"] - out["iterator_switch_s"], 3)
            loss = (logs or {}).get("loss")
            if loss is not None and math.isfinite(float(loss)):
                out["loss"] = round(float(loss), 4)
            print(json.dumps(out), flush=True)

    model.fit(train_ds, validation_data=val_ds, epochs=a.epochs, verbose=0,
              callbacks=[Timer()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
