"""Where EnvPool has no wheel, neuroplug installs without it (offline: the markers alone;
scripts/check_platform_wheels.py, run by .ci/run, checks them against the index)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from packaging.markers import default_environment
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _installed_on(system: str, machine: str) -> set[str]:
    names = {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}
    environment = {
        **default_environment(),
        "sys_platform": system,
        "platform_system": names[system],
        "platform_machine": machine,
    }
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    requirements = [Requirement(line) for line in dependencies]
    return {
        requirement.name
        for requirement in requirements
        if requirement.marker is None or requirement.marker.evaluate(environment)
    }


@pytest.mark.parametrize(
    ("system", "machine", "envpool"),
    [
        ("linux", "x86_64", True),
        ("linux", "aarch64", True),  # EnvPool 1.2.5: manylinux_2_28 aarch64 wheels
        ("darwin", "arm64", True),
        ("win32", "AMD64", True),
        ("darwin", "x86_64", False),  # no wheel for Intel Macs
        ("win32", "ARM64", False),
        ("linux", "ppc64le", False),
    ],
)
def test_envpool_is_required_exactly_where_it_has_wheels(system, machine, envpool):
    installed = _installed_on(system, machine)
    assert ("envpool" in installed) is envpool
    assert {"torch", "gymnasium", "hydra-core", "omegaconf"} <= installed
