# SPDX-License-Identifier: MIT
"""Keras's image_dataset_from_directory, registered with the clairfs mount
its directory is on.

    import clairfs.keras
    train, val = clairfs.keras.image_dataset_from_directory(
        "/mnt/data/train", seed=123, batch_size=64, validation_split=0.2, subset="both")

The dataset Keras returns does not keep the seed, batch size or split it
was made with, so there is nothing to read back from it as there is from a
DataLoader: this takes Keras's own arguments, calls Keras with them
unchanged, and registers the same values (with the global seed of
keras.utils.set_random_seed or tf.random.set_seed, and Keras's version).
What clairfs does not model is refused before Keras is called."""
import inspect

from ._errors import ClairfsError
from ._mount import find_mount, write_control


def _global_seed():
    """tf.random.set_seed's value (keras.utils.set_random_seed sets it), or
    None. Read without drawing an operation seed, which would move the
    seeds of the ops made after."""
    try:
        from tensorflow.python.eager import context
    except ImportError:
        return None
    return context.global_seed()


def _refuse_unmodelled(p):
    if p.get("labels", "inferred") != "inferred":
        raise ClairfsError(f"labels={p['labels']!r}: clairfs follows labels='inferred' (the "
                           "class directories), where the files' order is Keras's listing")
    if p.get("class_names") is not None:
        raise ClairfsError("class_names= picks and orders the class directories itself: clairfs "
                           "follows the listing of every class directory")
    if p.get("follow_links"):
        raise ClairfsError("follow_links=True: clairfs lists the directories without following "
                           "links, as Keras does by default")
    if p.get("format", "tf") != "tf":
        raise ClairfsError(f"format={p['format']!r}: clairfs follows the tf.data pipeline "
                           "(format='tf')")
    if p.get("batch_size") is None:
        raise ClairfsError("batch_size=None: clairfs follows a batched dataset (the shuffle "
                           "buffer is 8 batches)")


def registration(directory, *args, epochs=None, job=None, **kwargs):
    """(mount point, registration) for image_dataset_from_directory called
    with these arguments, without calling it."""
    import keras
    sig = inspect.signature(keras.utils.image_dataset_from_directory)
    try:
        bound = sig.bind(directory, *args, **kwargs)
    except TypeError as e:
        raise ClairfsError(f"image_dataset_from_directory: {e}") from e
    bound.apply_defaults()
    p = bound.arguments
    _refuse_unmodelled(p)
    global_seed = _global_seed()
    if p["shuffle"] and p["seed"] is None and global_seed is None:
        raise ClairfsError("seed=None and no global seed: Keras then draws the shuffle's seed "
                           "from numpy at random; give seed= or call keras.utils.set_random_seed "
                           "first")
    mount, rel = find_mount(p["directory"])
    body = {"framework": "tensorflow", "pipeline": "image_dataset_from_directory", "root": rel,
            "seed": p["seed"], "global_seed": global_seed, "batch_size": p["batch_size"],
            "shuffle": bool(p["shuffle"]), "keras_version": keras.__version__}
    if p["validation_split"] is not None:
        body["validation_split"] = p["validation_split"]
        body["subset"] = p["subset"]
    if epochs is not None:
        body["epochs"] = int(epochs)
    if job is not None:
        body["job"] = str(job)
    return mount, body, p


def image_dataset_from_directory(directory, *args, epochs=None, job=None, **kwargs):
    """keras.utils.image_dataset_from_directory(directory, *args, **kwargs),
    registered with the clairfs mount holding `directory` before it is
    returned. epochs= bounds the prediction; job= names the job beside
    others on the mount. Raises ClairfsError, with one line, for arguments
    clairfs does not model (labels other than 'inferred', class_names,
    follow_links, batch_size=None, seed=None without a global seed) and
    for a registration the mount refuses; Keras's own errors are Keras's."""
    import keras
    mount, body, p = registration(directory, *args, epochs=epochs, job=job, **kwargs)
    dataset = keras.utils.image_dataset_from_directory(**p)
    write_control(mount, body)
    return dataset
