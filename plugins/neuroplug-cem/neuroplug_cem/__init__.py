"""neuroplug-cem: the noisy cross-entropy method as a neuroplug algorithm (``algo=cem``).

neuroplug finds the algorithm through the ``neuroplug.algorithms`` entry point declared in
this distribution's ``pyproject.toml`` (:mod:`neuroplug_cem.cem`), and its settings through
``neuroplug.algorithm_configs`` (:mod:`neuroplug_cem.config`); importing this package is never
required by hand. It imports neither module, so reading the settings stays light.
"""
