"""neuroplug-cem: the noisy cross-entropy method as a neuroplug algorithm (``algo=cem``).

neuroplug finds the algorithm through the ``neuroplug.algorithms`` entry point declared in
this distribution's ``pyproject.toml``; importing this package is never required by hand.
"""

from neuroplug_cem.cem import CEMConfig, CrossEntropyMethod

__all__ = ["CEMConfig", "CrossEntropyMethod"]
