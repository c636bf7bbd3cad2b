"""neuroplug: neuroevolution and deep RL on one machine, with pluggable algorithms,
backends and schedulers.

The contracts every plugin honours are in :mod:`neuroplug.api`.
"""

__version__ = "0.1.0"
