"""One Ray test module at a time on a machine: ``test_ray_cluster.py`` starts a cluster
with ``ray start`` (which every ``ray.init`` on the machine then finds, refusing the
``num_cpus`` of another module's local Ray) and stops it with ``ray stop --force`` (which
ends every Ray on the machine). Under pytest-xdist two workers could run two of these
modules side by side; each module holds a machine-wide lock while it runs."""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="module", autouse=True)
def one_ray_module_at_a_time():
    """Holds ``<tmp>/neuroplug-ray-tests.lock`` for the module's tests."""
    with (Path(tempfile.gettempdir()) / "neuroplug-ray-tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
