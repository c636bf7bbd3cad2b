"""Resolve a learner's config as a run would, for tests of its settings and checks.

from neuroplug.testing import resolved_settings

def test_bad_value_names_the_field():
    with pytest.raises(ConfigError, match="algo.epochs"):
        resolved_settings(MyConfig(name="mine", epochs=0))
"""

from __future__ import annotations

from typing import Any

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.plugin_configs.presets import resolve


def resolved_settings(config: Any, task_id: str = "CartPole-v1") -> Any:
    """``config`` with its unset fields filled from its preset for ``task_id``'s kind of
    task, and checked, exactly as a run on that task does before any env starts."""
    return resolve(config, make_spec(EnvConfig(task_id=task_id)))[0]
