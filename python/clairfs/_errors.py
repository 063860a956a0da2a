# SPDX-License-Identifier: MIT
"""The one exception the package raises."""


class ClairfsError(ValueError):
    """What clairfs cannot follow, or a mount that refused a registration:
    one line saying which and what to do instead. A ValueError, since the
    loader or the path handed over is what does not fit."""
