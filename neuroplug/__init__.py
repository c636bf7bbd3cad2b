"""neuroplug: neuroevolution and deep RL on one machine, with pluggable algorithms,
backends and schedulers.

The contracts every plugin honours are in :mod:`neuroplug.api`. A trained policy leaves
with :func:`load_policy` (a ``torch.nn.Module``; :mod:`neuroplug.deploy`).
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["load_policy"]

if TYPE_CHECKING:
    from neuroplug.deploy.loading import load_policy


def __getattr__(name: str):
    # Imported on first use: ``import neuroplug`` stays free of torch (a run's front door
    # checks its config before torch is imported).
    if name == "load_policy":
        from neuroplug.deploy.loading import load_policy

        return load_policy
    raise AttributeError(f"module 'neuroplug' has no attribute {name!r}")
