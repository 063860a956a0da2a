# SPDX-License-Identifier: MIT
"""The TensorFlow side of test_tf_order.py: runs real TensorFlow / Keras
pipelines and reports the order their files come out in, which for every
pipeline here is the order they are opened (the shuffle runs before the
map that reads them; map keeps its input order).

Usage: PYTHON tf_orders.py JOBS.json OUT.json. Each job names a tree the
driver wrote (every image a 1x1 RGB PNG whose pixel encodes its number, and
ids.json mapping relative paths to those numbers), the pipeline and its
arguments, the caller ("loop": one `for` over the dataset per epoch; "fit":
keras Model.fit(epochs=...)) and the epoch count. The answer per job is one
list per epoch: the images' numbers where the pipeline decodes images,
else the relative paths it yields. One process runs every job: importing
TensorFlow takes longer than all of them.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402


def pixel_ids(x):
    x = np.asarray(x).astype(np.int64).reshape(-1, 3)
    return [int(v) for v in x[:, 0] + 256 * x[:, 1] + 65536 * x[:, 2]]


def decode(path):
    img = tf.io.decode_png(tf.io.read_file(path), channels=3)
    return tf.cast(tf.reshape(img, (1, 1, 3)), tf.float32)


def set_seeds(job):
    g = job.get("global_seed")
    if g is None:
        tf.random.set_seed(None)  # unset: get_seed uses the default graph seed
    elif job.get("global_via") == "tf":
        tf.random.set_seed(g)
    else:
        keras.utils.set_random_seed(g)


def make_dataset(job):
    """(dataset, yields_images): the pipeline the job describes."""
    root = job["tree"]
    seed = job.get("seed")
    if job["pipeline"] == "image_dataset_from_directory":
        kw = {}
        if "validation_split" in job:
            kw = {"validation_split": job["validation_split"], "subset": job["subset"]}
        ds = keras.utils.image_dataset_from_directory(
            root, seed=seed, batch_size=job["batch_size"], image_size=(1, 1),
            shuffle=job.get("shuffle", True), verbose=False, **kw)
        return ds, True
    pattern = os.path.join(root, job["pattern"])
    if "shuffle_buffer" in job:  # the general pipeline: list, then shuffle
        ds = tf.data.Dataset.list_files(pattern, shuffle=False)
        ds = ds.shuffle(job["shuffle_buffer"], seed=seed)
    else:
        ds = tf.data.Dataset.list_files(pattern, shuffle=job.get("shuffle", True), seed=seed)
    if job["caller"] == "fit" or job.get("read", False):
        ds = ds.map(lambda p: (decode(p), 0.0), num_parallel_calls=tf.data.AUTOTUNE)
        return ds.batch(job["batch_size"]).prefetch(tf.data.AUTOTUNE), True
    return ds.batch(job["batch_size"]), False


def loop_epochs(ds, images, epochs):
    out = []
    for _ in range(epochs):
        seen = []
        for batch in ds:
            if images:
                seen += pixel_ids(batch[0])
            else:
                seen += [p.decode() for p in batch.numpy()]
        out.append(seen)
    return out


class Recorder(keras.Model):
    """A model whose training step only writes down what it was given."""

    def __init__(self):
        super().__init__()
        self.dense = keras.layers.Dense(1)
        self.seen = []

    def call(self, x):
        return self.dense(keras.ops.reshape(x, (-1, 3)))

    def train_step(self, data):
        self.seen[-1] += pixel_ids(data[0].numpy())
        return {"n": keras.ops.convert_to_tensor(0.0)}


def fit_epochs(ds, epochs):
    model = Recorder()
    model.compile(run_eagerly=True)

    class Mark(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            model.seen.append([])

    model.fit(ds, epochs=epochs, verbose=0, callbacks=[Mark()])
    return model.seen


def run(job):
    set_seeds(job)
    ds, images = make_dataset(job)
    epochs = job["epochs"]
    seen = fit_epochs(ds, epochs) if job["caller"] == "fit" else loop_epochs(ds, images, epochs)
    if images:
        return seen  # the numbers the pixels hold
    root = job["tree"].rstrip("/") + "/"
    return [[os.path.relpath(s, root) for s in e] for e in seen]


def main():
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    answers = {}
    for job in jobs:
        try:
            answers[job["name"]] = {"epochs": run(job)}
        except Exception as e:  # reported per job, so one failure does not hide the rest
            answers[job["name"]] = {"error": f"{type(e).__name__}: {e}"}
    with open(sys.argv[2], "w") as f:
        json.dump({"versions": {"tensorflow": tf.__version__, "keras": keras.__version__},
                   "answers": answers}, f)


if __name__ == "__main__":
    main()
