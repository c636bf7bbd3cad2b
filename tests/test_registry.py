"""The plugin registry: discovery from metadata, clear errors for every way it can go wrong."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neuroplug import registry
from neuroplug.errors import PluginError


def _fake_distribution(root: Path, name: str, entry_points: str, module: str | None = None) -> None:
    """A minimal installed distribution: a dist-info folder (and optionally a module)."""
    info = root / f"{name.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    if module is not None:
        (root / f"{name.replace('-', '_')}.py").write_text(textwrap.dedent(module))


def test_first_party_plugins_are_discovered_through_entry_points():
    assert registry.resolve("algorithms", "es").distribution == "neuroplug"
    assert registry.resolve("backends", "torch").target.endswith(":TorchBackend")
    assert registry.resolve("schedulers", "threaded").version


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(
        PluginError, match=r"no algorithm plugin named 'nope'; available algorithms: .*es"
    ):
        registry.load("algorithms", "nope")


def test_two_distributions_claiming_a_name_are_both_named(tmp_path, monkeypatch):
    _fake_distribution(tmp_path, "neuroplug-rival", "[neuroplug.algorithms]\nes = rival:ES\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError) as error:
        registry.load("algorithms", "es")
    assert "neuroplug-rival 1.2.3" in str(error.value)
    assert "neuroplug 0.1.0" in str(error.value)


def test_a_plugin_that_fails_to_import_names_its_distribution_and_others_still_load(
    tmp_path, monkeypatch
):
    _fake_distribution(
        tmp_path,
        "neuroplug-broken",
        "[neuroplug.algorithms]\nbroken = neuroplug_broken:Broken\n",
        module="import a_module_that_does_not_exist\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        PluginError,
        match=r"from distribution neuroplug-broken 1\.2\.3 failed to load .*ModuleNotFoundError",
    ):
        registry.load("algorithms", "broken")
    assert registry.load("algorithms", "es").__name__ == "OpenAIES"


def test_an_entry_point_to_the_wrong_kind_of_class_is_rejected(tmp_path, monkeypatch):
    _fake_distribution(
        tmp_path,
        "neuroplug-wrong",
        "[neuroplug.schedulers]\nwrong = neuroplug_wrong:NotAScheduler\n",
        module="class NotAScheduler:\n    pass\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="not a subclass of neuroplug.api.Scheduler"):
        registry.load("schedulers", "wrong")


def test_unknown_kind_is_rejected():
    with pytest.raises(PluginError, match="kinds are: algorithms, backends, schedulers, learners"):
        registry.discover("optimizers")


def test_algo_selects_an_algorithm_or_a_learner_and_names_both_kinds_when_unknown():
    kind, plugin = registry.load_selected("algo", "es")
    assert kind.name == "algorithms" and plugin.__name__ == "OpenAIES"
    with pytest.raises(PluginError, match=r"no algo plugin named 'nope'; available: .*es"):
        registry.load_selected("algo", "nope")


def test_one_name_claimed_by_an_algorithm_and_a_learner_is_an_error(tmp_path, monkeypatch):
    dist = tmp_path / "twin_kinds-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: twin-kinds\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[neuroplug.learners]\nes = twin_kinds:Learner\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="algo=es is claimed by more than one kind"):
        registry.load_selected("algo", "es")


OLDER_CONTRACT = """\
from neuroplug.api import Algorithm

class Old(Algorithm):
    contract = 0
"""

NEWER_CONTRACT = """\
from neuroplug.rl.base import SegmentLearner

class FromTheFuture(SegmentLearner):
    contract = 2
"""

NOT_IMPLEMENTED = """\
from neuroplug.api import Scheduler

class Partial(Scheduler):
    pass
"""

OLD_CONSTRUCTOR = """\
from neuroplug_algorithms.es import OpenAIES

class OneArgument(OpenAIES):
    def __init__(self, config):
        super().__init__(config, None)
"""


@pytest.mark.parametrize(
    ("kind", "module", "target", "expected"),
    [
        (
            "algorithms",
            OLDER_CONTRACT,
            "Old",
            r"written for neuroplug's plugin contract 0; this neuroplug has contract 1 "
            r"\(update the plugin; what changed between contracts is listed in neuroplug's "
            r"CHANGELOG\.md\)",
        ),
        (
            "learners",
            NEWER_CONTRACT,
            "FromTheFuture",
            r"written for neuroplug's plugin contract 2; this neuroplug has contract 1 "
            r"\(upgrade neuroplug",
        ),
        (
            "schedulers",
            NOT_IMPLEMENTED,
            "Partial",
            r"does not implement neuroplug\.api\.Scheduler's evaluate\(\)",
        ),
    ],
)
def test_a_plugin_written_for_another_contract_gets_one_line_naming_its_distribution(
    tmp_path, monkeypatch, kind, module, target, expected
):
    package = f"neuroplug-old-{target.lower()}"  # a module of its own: imports are cached
    _fake_distribution(
        tmp_path,
        package,
        f"[neuroplug.{kind}]\nold = {package.replace('-', '_')}:{target}\n",
        module=module,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match=expected) as error:
        registry.load(kind, "old")
    assert f"from distribution {package} 1.2.3" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_constructor_of_another_contract_is_reported_not_a_type_error(tmp_path, monkeypatch):
    _fake_distribution(
        tmp_path,
        "neuroplug-old-constructor",
        "[neuroplug.algorithms]\nold = neuroplug_old_constructor:OneArgument\n",
        module=OLD_CONSTRUCTOR,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = registry.load("algorithms", "old")
    with pytest.raises(
        PluginError,
        match=r"neuroplug-old-constructor 1\.2\.3 cannot be built with neuroplug's arguments",
    ):
        registry.construct("algorithms", "old", plugin, object(), object())


_LIGHT_PLUGIN = """
    from dataclasses import dataclass

    from neuroplug_algorithms.random_search_config import RandomSearchConfig
    from neuroplug_algorithms.random_search import RandomSearch


    @dataclass
    class LightConfig(RandomSearchConfig):
        population_size: int = 4


    class Light(RandomSearch):
        config_class = LightConfig
"""


def test_a_config_entry_point_is_read_without_importing_the_plugin(tmp_path, monkeypatch):
    _fake_distribution(
        tmp_path,
        "neuroplug-light",
        "[neuroplug.algorithms]\nlight = neuroplug_light_algorithm:Light\n"
        "[neuroplug.algorithm_configs]\nlight = neuroplug_light:LightConfig\n",
        module="""
        from dataclasses import dataclass

        from neuroplug.api import AlgorithmConfig


        @dataclass
        class LightConfig(AlgorithmConfig):
            population_size: int = 4
        """,
    )
    # The algorithm's module does not import: reading the config must not need it.
    (tmp_path / "neuroplug_light_algorithm.py").write_text("raise ImportError('heavy')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.load_config_class("algorithms", "light").__name__ == "LightConfig"
    assert registry.selected_config_class("algo", "light").__module__ == "neuroplug_light"
    with pytest.raises(PluginError, match="failed to load .*heavy"):
        registry.load("algorithms", "light")


def test_a_plugin_without_a_config_entry_point_is_loaded_for_its_config(tmp_path, monkeypatch):
    _fake_distribution(
        tmp_path,
        "neuroplug-plain",
        "[neuroplug.algorithms]\nplain = neuroplug_plain:Light\n",
        module=_LIGHT_PLUGIN,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.load_config_class("algorithms", "plain").__name__ == "LightConfig"


def test_a_config_entry_point_naming_another_class_than_the_plugins_is_refused(
    tmp_path, monkeypatch
):
    _fake_distribution(
        tmp_path,
        "neuroplug-split",
        "[neuroplug.algorithms]\nsplit = neuroplug_split:Light\n"
        "[neuroplug.algorithm_configs]\nsplit = neuroplug_split:OtherConfig\n",
        module=_LIGHT_PLUGIN + "\n    OtherConfig = RandomSearchConfig\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="config entry point names neuroplug_split:OtherConfig"):
        registry.load("algorithms", "split")


def test_every_first_party_config_entry_point_names_its_plugins_config_class():
    for kind in registry.KINDS.values():
        for name in registry.discover(kind.name):
            if registry.resolve(kind.name, name).distribution != "neuroplug":
                continue
            plugin = registry.load(kind.name, name)  # refuses a mismatch
            assert registry.load_config_class(kind.name, name) is plugin.config_class
            assert registry._config_entry_point(kind.name, name, registry.resolve(kind.name, name))


def test_reading_every_first_party_config_imports_no_torch():
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from neuroplug import registry\n"
        "for kind in registry.KINDS.values():\n"
        "    for name in registry.discover(kind.name):\n"
        "        registry.load_config_class(kind.name, name)\n"
        "print(sorted(m for m in ('torch', 'envpool', 'ray', 'triton') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
