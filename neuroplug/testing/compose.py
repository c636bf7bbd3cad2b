"""Compose a config as ``python -m neuroplug`` does, for plugin authors' tests.

``compose(["algo=myalgo", "env=cartpole"])`` registers every schema (neuroplug's and the
installed plugins') in Hydra's ConfigStore and composes ``conf/config.yaml`` with the
overrides: what the resume checks (:mod:`neuroplug.testing.resume_check`) take as their
``compose`` argument.
"""

from __future__ import annotations

from typing import Any


def compose(overrides: list[str] | None = None) -> Any:
    """The composed DictConfig for ``overrides``, as the command line composes it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from neuroplug.config.paths import conf_dir
    from neuroplug.experiment.hydra_store import register_resolvers, register_schemas

    register_resolvers()
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=list(overrides or []))
