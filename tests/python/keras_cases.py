#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Keras side of tests/python/test_register.py, run by the frameworks
venv's Python (TensorFlow, Keras 3) with the clairfs package importable:
clairfs.keras.image_dataset_from_directory over MNT/kimg (1x1 PNGs) in
place of Keras's, then plain loops over the dataset, as a script would.
One JSON line per case: each registered loader's run_opens, run_matched
and mode after the epochs, and the images the loops got; or, for a case
clairfs must refuse, the ClairfsError's message.

usage: keras_cases.py MNT"""
import json
import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import clairfs  # noqa: E402
import clairfs.keras  # noqa: E402

MNT = sys.argv[1]
ROOT = os.path.join(MNT, "kimg")
COMMON = dict(image_size=(1, 1), interpolation="nearest")


def count(ds):
    return sum(int(tf.shape(x)[0]) for x, _ in ds)


def seeded():
    ds = clairfs.keras.image_dataset_from_directory(ROOT, seed=5, batch_size=4, **COMMON)
    return [[ds], [ds]]          # two epochs of one dataset


def both_global_seed():
    keras.utils.set_random_seed(9)   # the global seed shapes the shuffle's op seed
    train, val = clairfs.keras.image_dataset_from_directory(
        ROOT, seed=21, batch_size=3, validation_split=0.25, subset="both", **COMMON)
    return [[train, val], [train, val]]


def global_seed_only():
    ds = clairfs.keras.image_dataset_from_directory(ROOT, batch_size=4, **COMMON)
    return [[ds], [ds]]


def unshuffled():
    ds = clairfs.keras.image_dataset_from_directory(ROOT, shuffle=False, batch_size=5, **COMMON)
    return [[ds], [ds]]


CASES = [seeded, both_global_seed, global_seed_only, unshuffled]


def refuse_unseeded():
    # Before any case sets the global seed (this runs first).
    clairfs.keras.image_dataset_from_directory(ROOT, batch_size=4, **COMMON)


def refuse_labels():
    clairfs.keras.image_dataset_from_directory(ROOT, labels=None, seed=1, **COMMON)


def refuse_class_names():
    clairfs.keras.image_dataset_from_directory(ROOT, class_names=["c1", "c0"], seed=1, **COMMON)


def refuse_unbatched():
    clairfs.keras.image_dataset_from_directory(ROOT, batch_size=None, seed=1, **COMMON)


def refuse_not_on_a_mount():
    clairfs.keras.image_dataset_from_directory(sys.argv[2], seed=1, **COMMON)


REFUSALS = [refuse_unseeded, refuse_labels, refuse_class_names, refuse_unbatched,
            refuse_not_on_a_mount]


def main():
    print(json.dumps({"keras": keras.__version__, "clairfs": clairfs.__file__}), flush=True)
    for case in REFUSALS:
        out = {"refusal": case.__name__}
        try:
            case()
            out["error"] = "not refused"
        except clairfs.ClairfsError as e:
            out["message"] = str(e)
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(out), flush=True)
    for case in CASES:
        out = {"case": case.__name__}
        try:
            clairfs.unregister(MNT)
            epochs = case()
            out["images"] = [[count(ds) for ds in passes] for passes in epochs]
            st = clairfs.explain(ROOT)
            out["mode"] = st["mode"]
            out["loaders"] = [{k: l[k] for k in ("root", "mode", "run_opens", "run_matched",
                                                 "resyncs")}
                              for j in st["jobs"] for l in j["loaders"]]
        except Exception as e:
            out["error"] = f"{type(e).__name__}: {e}"
            out["trace"] = traceback.format_exc()[-2000:]
        print(json.dumps(out), flush=True)
    clairfs.unregister(MNT)


if __name__ == "__main__":
    main()
