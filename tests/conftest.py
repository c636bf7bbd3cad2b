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
    """``compose(["algo=es", ...])`` -> the composed DictConfig, as ``python -m neuroplug``
    sees it (:func:`neuroplug.testing.compose`, what plugin authors use)."""
    from neuroplug.testing import compose as compose_config

    return compose_config


@pytest.fixture
def quiet_overrides() -> list[str]:
    """Overrides that keep a run tiny and silent."""
    return ["logger=none", "run.eval_episodes=2", "algo.population_size=8"]
