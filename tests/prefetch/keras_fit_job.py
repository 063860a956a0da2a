# SPDX-License-Identifier: MIT
"""A Keras 3 training script as users write it, for test_keras_prefetch.py:
image_dataset_from_directory over the mount, a tiny model, fit() (or a
plain loop over the dataset). Nothing in it knows about clairfs.

argv[1] is a JSON object: root (the train directory), seed, batch_size,
epochs, caller ("fit", "loop" or "list_files": a plain loop over
tf.data.Dataset.list_files(root/*/*.png, seed=seed) whose map reads and
decodes each file with num_parallel_calls=AUTOTUNE), optionally global_seed
(keras.utils.set_random_seed), validation_split (then the validation
subset is passed to fit as validation_data), and the shape of the keras-io
"image classification from scratch" example: previews (that many
`for images, labels in train.take(1)` before fit), augment (RandomFlip and
RandomRotation layers in a map with num_parallel_calls=AUTOTUNE, then
prefetch(AUTOTUNE) on both datasets), after (once fit is done, one
training file read whole, as keras.utils.load_img would, and a predict on
an array).

Each image is one pixel whose value names its file (see make_tree in the
test), so what the job decoded proves which file's bytes it got. Prints
one JSON line per epoch: {"epoch": e, "train": [ids in the order yielded],
"val": [...]}; `ids` are decoded pixel values."""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def ids_of(images):
    """The file number each decoded 1x1 RGB image carries."""
    px = np.rint(images.numpy()[:, 0, 0, :]).astype(np.int64)
    return (px[:, 0] | (px[:, 1] << 8) | (px[:, 2] << 16)).tolist()


def status_of(cfg):
    """The status file's JSON as this epoch ends, if asked for. With
    "gate", first waits (up to 60 s) until the mount has detected the job
    and follows it (a detection that fell back is not one):
    epoch 0 here takes a second, on a slow shared file system minutes."""
    if not cfg.get("status"):
        return {}
    deadline = time.monotonic() + (60 if cfg.get("gate") else 0)
    while True:
        with open(cfg["status"]) as f:
            st = json.load(f)
        detected = st.get("registered") == "detected" and st.get("mode") == "clairvoyant"
        if detected or time.monotonic() >= deadline:
            return {"status": st}
        time.sleep(0.1)


class Seen(keras.callbacks.Callback):
    """Collects what each epoch's batches held; the model's input layer
    passes the images through a Lambda that records them."""

    def __init__(self, record, cfg):
        super().__init__()
        self.record = record
        self.cfg = cfg

    def on_epoch_end(self, epoch, logs=None):
        print(json.dumps({"epoch": epoch, "train": self.record["train"],
                          "val": self.record["val"], **status_of(self.cfg)}), flush=True)
        self.record["train"], self.record["val"] = [], []


def list_files(cfg):
    """The other common tf.data shape: the file names shuffled by
    list_files, each read and decoded in a parallel map, then batched."""
    files = tf.data.Dataset.list_files(os.path.join(cfg["root"], "*", "*.png"), shuffle=True,
                                       seed=cfg.get("seed"))
    ds = files.map(lambda path: tf.io.decode_png(tf.io.read_file(path), channels=3),
                   num_parallel_calls=tf.data.AUTOTUNE).batch(cfg["batch_size"])
    for e in range(cfg["epochs"]):
        out = {"epoch": e, "train": [], "val": []}
        for images in ds:
            out["train"] += ids_of(tf.cast(images, tf.float32))
        print(json.dumps({**out, **status_of(cfg)}), flush=True)


def main():
    cfg = json.loads(sys.argv[1])
    if cfg.get("global_seed") is not None:
        keras.utils.set_random_seed(cfg["global_seed"])
    if cfg.get("caller") == "list_files":
        return list_files(cfg)
    common = dict(shuffle=True, seed=cfg.get("seed"), batch_size=cfg["batch_size"],
                  image_size=(1, 1), interpolation="nearest")
    split = cfg.get("validation_split")
    if split:
        train, val = keras.utils.image_dataset_from_directory(
            cfg["root"], validation_split=split, subset="both", **common)
    else:
        train, val = keras.utils.image_dataset_from_directory(cfg["root"], **common), None

    for _ in range(cfg.get("previews", 0)):
        for images, labels in train.take(1):  # the example looks at a batch
            pass

    if cfg.get("caller", "fit") == "loop":
        for e in range(cfg["epochs"]):
            out = {"epoch": e, "train": [], "val": []}
            for images, _ in train:
                out["train"] += ids_of(images)
            if val is not None:
                for images, _ in val:
                    out["val"] += ids_of(images)
            print(json.dumps({**out, **status_of(cfg)}), flush=True)
        return

    # fit(): the ids go out through a side channel, a py_function in the
    # dataset after the read, so the pipeline that opens the files is the
    # one image_dataset_from_directory built.
    record = {"train": [], "val": []}

    def tap(name):
        def note(images):
            record[name] += ids_of(images)
            return np.int64(0)

        def fn(images, labels):
            done = tf.py_function(note, [images], tf.int64)
            with tf.control_dependencies([done]):
                return tf.identity(images), labels
        return fn

    train = train.map(tap("train"))
    if val is not None:
        val = val.map(tap("val"))
    if cfg.get("augment"):
        flip, rotate = keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1)
        train = train.map(lambda img, label: (rotate(flip(img)), label),
                          num_parallel_calls=tf.data.AUTOTUNE)
        train = train.prefetch(tf.data.AUTOTUNE)
        if val is not None:
            val = val.prefetch(tf.data.AUTOTUNE)
    classes = len(os.listdir(cfg["root"]))
    model = keras.Sequential([keras.Input((1, 1, 3)), keras.layers.Flatten(),
                              keras.layers.Dense(classes)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    model.fit(train, validation_data=val, epochs=cfg["epochs"], verbose=0,
              callbacks=[Seen(record, cfg)])
    if cfg.get("after"):
        first = sorted(os.listdir(cfg["root"]))[0]
        name = sorted(os.listdir(os.path.join(cfg["root"], first)))[0]
        with open(os.path.join(cfg["root"], first, name), "rb") as f:  # load_img's read
            f.read()
        model.predict(np.zeros((1, 1, 1, 3), dtype=np.float32), verbose=0)


if __name__ == "__main__":
    main()
