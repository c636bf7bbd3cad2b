"""Deprecated alias of :mod:`neuroplug.engine.lockstep` (see :mod:`neuroplug.schedulers`)."""

import sys

from neuroplug.engine import lockstep

# The old name is the same module object, so its classes and functions are the same ones.
sys.modules[__name__] = lockstep
