"""Shared fixtures: compose neuroplug configs the way the CLI does, offline and quick."""

from __future__ import annotations

import os
import sys
import warnings

import pytest

# Tests never touch the network: W&B writes offline files only, quietly (inherited by
# the neuroplug subprocesses the tests start).
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
warnings.filterwarnings("ignore", message=".*precision lowered.*")

# scripts/test.sh runs the suite in one pytest-xdist worker per core.
SHARING_THE_CORES = "PYTEST_XDIST_WORKER" in os.environ


def pytest_runtest_setup(item):
    """Beside other workers, each test starts with PyTorch on one thread. A run follows the
    load itself (:class:`neuroplug.runtime.devices.TorchThreads`, before every generation), but a
    test that drives a learner or population directly keeps PyTorch's default of one
    thread per core, and OpenMP teams on shared cores wait on each other: a PBT test took
    152 s instead of 11 s beside one busy process (2-core Xeon, model 167)."""
    if SHARING_THE_CORES and "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)


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
