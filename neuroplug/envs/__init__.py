"""Environments: validated specs (EnvPool tasks and gymnasium envs) and pools seeded per
episode (:mod:`neuroplug.envs.make`). Importing the package imports nothing else: the
plugin listing reads :mod:`neuroplug.envs.family` without paying for torch or EnvPool."""
