"""Env families from packages: registered by entry point, listed, chosen, checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_distribution import install_distribution

from neuroplug.config.schema import EnvConfig
from neuroplug.envs import families
from neuroplug.envs.family import EnvFamily
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError, PluginError
from neuroplug.testing import check_env_family
from neuroplug.testing.env_family_contract import FamilyContractViolation

SUPPORT = Path(__file__).resolve().parents[1] / "support"
FAMILY_MODULE = '''
from neuroplug.envs.family import EnvFamily


class Corridors(EnvFamily):
    """The corridor envs of a made-up package: scored by their info's "position"."""

    name = "{name}"
    score_info_key = "position"

    def detects_gymnasium(self, env_name):
        return env_name == "Corridor"
'''


def _distribution(root: Path, name: str = "corridors") -> Path:
    """A site directory holding an installed package that registers one env family."""
    site = root / "site"
    (site / "corridor_family").mkdir(parents=True)
    (site / "corridor_family" / "__init__.py").write_text(FAMILY_MODULE.format(name=name))
    info = site / "neuroplug_corridors-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: neuroplug-corridors\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        "[neuroplug.env_families]\ncorridors = corridor_family:Corridors\n"
    )
    return site


@pytest.fixture
def installed(tmp_path):
    """Install the family's distribution on sys.path for one test."""

    def install(name: str = "corridors") -> Path:
        site = _distribution(tmp_path, name)
        sys.path.insert(0, str(site))
        families.all_families.cache_clear()
        return site

    yield install
    sys.path[:] = [entry for entry in sys.path if not entry.startswith(str(tmp_path))]
    sys.modules.pop("corridor_family", None)
    families.all_families.cache_clear()


def test_a_registered_family_claims_its_envs_and_its_traits_apply(installed):
    installed()
    spec = make_spec(EnvConfig(entry_point="corridor_env:Corridor", max_episode_steps=20))
    assert spec.family.name == "corridors"
    assert spec.family.score_info_key == "position"
    assert "position" in spec.maker.info_keys  # the true score reaches the pools
    # Other gymnasium envs keep the plain family; naming one overrides detection.
    assert make_spec(EnvConfig(id="CartPole-v1")).family.name == "gymnasium"
    named = EnvConfig(entry_point="corridor_env:Corridor", max_episode_steps=20, family="corridors")
    assert make_spec(named).family.name == "corridors"


def test_a_family_whose_score_key_the_env_lacks_is_refused_at_start_up(installed):
    installed()
    # CartPole's info holds no "position": the run would crash at its first reset.
    with pytest.raises(ConfigError, match=r"corridors family .*info\['position'\]") as error:
        make_spec(EnvConfig(id="CartPole-v1", family="corridors"))
    assert error.value.field == "env.family" and "\n" not in str(error.value)


def test_a_family_named_unlike_its_entry_point_is_refused(installed):
    installed(name="other")
    with pytest.raises(PluginError, match="entry point's name must be the family's"):
        families.all_families()


FAMILY = """
from neuroplug.envs.family import EnvFamily


class Mazes(EnvFamily):
    name = "{name}"
"""


@pytest.mark.parametrize(
    ("distributions", "expected"),
    [
        (  # two distributions claim one name: both are named, as for every plugin kind
            {
                "maze-a": ("mazes", "maze_a:Mazes", FAMILY),
                "maze-b": ("mazes", "maze_b:Mazes", FAMILY),
            },
            r"env_family name 'mazes' is claimed by more than one distribution: .* and .*; "
            "uninstall one of them or rename its entry point",
        ),
        (
            {"maze-a": ("mazes", "maze_a:Mazes", "import a_module_that_does_not_exist\n")},
            r"env_family plugin 'mazes' from distribution maze-a 1\.0 failed to load "
            r"\(maze_a:Mazes\): ModuleNotFoundError",
        ),
        (
            {"maze-a": ("mazes", "maze_a:Mazes", "class Mazes:\n    name = 'mazes'\n")},
            r"from distribution maze-a 1\.0 points at maze_a:Mazes, which is not a subclass of "
            r"neuroplug\.envs\.family\.EnvFamily",
        ),
        (
            {
                "maze-a": (
                    "mazes",
                    "maze_a:Mazes",
                    FAMILY + "\n    def __init__(self, size):\n        pass\n",
                )
            },
            r"env_family plugin 'mazes' from distribution maze-a 1\.0 cannot be built without "
            r"arguments: TypeError",
        ),
        (
            {"maze-a": ("classic", "maze_a:Mazes", FAMILY)},
            r"env_family plugin 'classic' from distribution maze-a 1\.0 takes the name of a "
            "family neuroplug ships",
        ),
    ],
    ids=["two-claimants", "fails-to-import", "not-a-family", "takes-arguments", "shipped-name"],
)
def test_a_broken_family_package_is_refused_naming_its_distribution(
    tmp_path, monkeypatch, distributions, expected
):
    for distribution, (name, target, module) in distributions.items():
        module_name = target.partition(":")[0]
        install_distribution(
            tmp_path,
            distribution,
            {"neuroplug.env_families": {name: target}},
            {f"{module_name}.py": module.format(name=name)},
        )
        monkeypatch.delitem(sys.modules, module_name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    families.all_families.cache_clear()
    try:
        with pytest.raises(PluginError, match=expected) as error:
            families.all_families()
    finally:
        families.all_families.cache_clear()
    assert "\n" not in str(error.value)
    assert all(f"{distribution} 1.0" in str(error.value) for distribution in distributions)


def test_list_plugins_shows_the_family_from_its_distribution(tmp_path):
    site = _distribution(tmp_path)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SUPPORT)])}
    listing = subprocess.run(
        [sys.executable, "-m", "neuroplug", "--list-plugins"],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    ).stdout
    row = next(line for line in listing.splitlines() if line.startswith("env_family"))
    assert row.split()[1:4] == ["corridors", "neuroplug-corridors", "0.1"]


def test_every_shipped_family_honours_the_contract():
    for family in families.all_families():
        assert check_env_family(type(family)) == family


def test_the_contract_names_a_broken_trait():
    class NoSkip(EnvFamily):
        name = "no_skip"

        def frame_skip(self, settings):
            return 0

    class BadNetwork(EnvFamily):
        name = "bad_network"

        def default_network(self, is_image):
            return "perceiver"

    class Classic(EnvFamily):
        name = "classic"  # neuroplug ships a family of that name

    with pytest.raises(FamilyContractViolation, match="'classic' is a family neuroplug ships"):
        check_env_family(Classic)
    with pytest.raises(FamilyContractViolation, match="frame_skip"):
        check_env_family(NoSkip)
    with pytest.raises(FamilyContractViolation, match="perceiver"):
        check_env_family(BadNetwork)


def test_an_envpool_task_without_its_familys_info_key_is_refused_naming_both():
    envpool = pytest.importorskip("envpool")
    from neuroplug.envs import envpool_pools

    atari = families.family_named("atari")
    keys = envpool.make_spec("CartPole-v1")._state_keys
    with pytest.raises(ConfigError, match=r"atari family reads info\['reward'\]") as error:
        envpool_pools._check_info_keys(atari, "CartPole-v1", keys)
    assert error.value.field == "env.family"
    envpool_pools._check_info_keys(atari, "Pong-v5", envpool.make_spec("Pong-v5")._state_keys)
