"""The plugin guide's example (docs/plugins.md, "Write your own plugin") is real, working code."""

from __future__ import annotations

import torch
from readme_code import readme_module

from neuroplug.testing import check_algorithm_contract, synthetic_context, synthetic_result


def _readme_plugin():
    """The guide's example (docs/plugins.md), executed as a module of its own."""
    return readme_module("class SNES(", "readme_snes")


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
