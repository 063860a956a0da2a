# SPDX-License-Identifier: MIT
"""clairfs from a training script: one line registers a torch DataLoader
with the clairfs mount its dataset sits on, so clairfs prefetches in the
loader's exact order; another reads what the mount is doing.

    import clairfs
    clairfs.register(train_loader)            # before the first epoch
    clairfs.explain(train_loader)["match_rate"]

Only the standard library is imported; torch is the caller's."""
from ._errors import ClairfsError
from ._mount import find_mount
from ._register import explain, register, registration, unregister

__all__ = ["ClairfsError", "explain", "find_mount", "register", "registration",
           "unregister"]
__version__ = "0.1.0"
