"""The plugin guide's example (README.md, "Write your own plugin") is real, working code."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import torch

from neuroplug.testing import check_algorithm_contract, synthetic_context, synthetic_result

README = Path(__file__).resolve().parents[1] / "README.md"


def _readme_plugin() -> types.ModuleType:
    """The README's SNES module, executed as a module of its own."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    source = next(block for block in blocks if "class SNES(" in block)
    module = types.ModuleType("readme_snes")
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, str(README), "exec"), module.__dict__)
    return module


def test_the_readme_plugin_honours_the_contract():
    check_algorithm_contract(_readme_plugin().SNES)


def test_the_readme_plugin_is_compact_and_learns():
    snes_module = _readme_plugin()
    snes = snes_module.SNES(snes_module.SNESConfig(population_size=16), synthetic_context(20))
    target = torch.linspace(-0.5, 0.5, 20)
    start = float((snes.policy_params() - target).norm())
    for _ in range(60):
        population = snes.ask()
        # One base and one sigma vector, whatever the population size: no P x D anywhere.
        assert population.num_bases == 1 and tuple(population.sigma.shape) == (1, 20)
        fitness = -((population.materialize() - target) ** 2).sum(dim=1).numpy()
        snes.tell(population, synthetic_result(fitness))
    assert float((snes.policy_params() - target).norm()) < 0.5 * start
