"""A plugin that imports a module that moved is told where it went."""

from __future__ import annotations

import subprocess
import sys

import pytest

import neuroplug  # noqa: F401 - installs the finder


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("neuroplug.learners", "neuroplug.rl"),
        ("neuroplug.learners.base", "neuroplug.rl"),
        ("neuroplug.rl.population_acting", "neuroplug.rl.acting"),
        ("neuroplug.rl.presets", "neuroplug.presets"),
        ("neuroplug.replay", "neuroplug.watch"),
        ("neuroplug_learners.configs", "neuroplug_learners.<learner>_config"),
        ("neuroplug_ray.configs", "neuroplug_ray.scheduler_config"),
        ("neuroplug.nets.build", "neuroplug.networks"),
    ],
)
def test_importing_a_moved_module_names_where_it_went(old, new):
    with pytest.raises(
        ModuleNotFoundError, match=rf"moved to {new} in neuroplug's plugin"
    ) as error:
        __import__(old)
    assert "\n" not in str(error.value)


def test_a_module_that_never_existed_fails_as_python_says():
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'neuroplug\.nothing_here'$"):
        __import__("neuroplug.nothing_here")


def test_a_plugin_importing_the_old_name_first_thing_is_told_too():
    # The finder is installed by the package itself: any neuroplug import brings it.
    code = "from neuroplug.rl.population_acting import PopulationActing"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert "moved to neuroplug.rl.acting" in result.stderr
