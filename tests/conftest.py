"""Shared fixtures: compose neuroplug configs the way the CLI does, offline and quick."""

from __future__ import annotations

import os
import warnings

import pytest

# Tests never touch the network: W&B writes offline files only, quietly (inherited by
# the neuroplug subprocesses the tests start).
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
warnings.filterwarnings("ignore", message=".*precision lowered.*")


@pytest.fixture(scope="session")
def compose():
    """``compose(["algo=es", ...])`` -> the composed DictConfig, as ``python -m neuroplug`` sees it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from neuroplug.config.paths import conf_dir
    from neuroplug.config_store import register_schemas

    register_schemas()

    def _compose(overrides: list[str] | None = None):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=list(overrides or []))

    return _compose


@pytest.fixture
def quiet_overrides() -> list[str]:
    """Overrides that keep a run tiny and silent."""
    return ["logger=none", "run.eval_episodes=2", "algo.population_size=8"]
