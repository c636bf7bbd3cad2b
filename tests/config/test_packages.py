"""Config options packages add (neuroplug.conf entry points): found, and refused when
they take a shipped option's name."""

from __future__ import annotations

import sys

import pytest
from fake_distribution import install_distribution

from neuroplug.config import packages
from neuroplug.errors import PluginError


def _package(root, option: str) -> None:
    """An installed distribution whose data package holds conf/env/<option>.yaml."""
    install_distribution(
        root,
        "neuroplug-demo",
        {"neuroplug.conf": {"demo": "demo_conf"}},
        {"demo_conf/__init__.py": "", f"demo_conf/env/{option}.yaml": "id: CartPole-v1\n"},
        version="0.1",
    )


@pytest.fixture
def installed(tmp_path, monkeypatch):
    def install(option: str) -> None:
        _package(tmp_path, option)
        monkeypatch.syspath_prepend(str(tmp_path))
        packages.package_options.cache_clear()

    yield install
    sys.modules.pop("demo_conf", None)
    packages.package_options.cache_clear()


def test_a_package_option_is_found_with_its_distribution(installed):
    installed("demo_pole")
    (option,) = [found for found in packages.package_options() if found.name == "demo_pole"]
    assert (option.group, option.distribution, option.version) == ("env", "neuroplug-demo", "0.1")


def test_a_package_option_that_takes_a_shipped_name_is_refused(installed):
    installed("cartpole")
    with pytest.raises(PluginError, match=r"neuroplug-demo 0\.1 adds env=cartpole .*ships"):
        packages.package_options()
