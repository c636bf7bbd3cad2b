"""The settings of ``algo=ns_es``, ``nsr_es`` and ``nsra_es`` (the novelty-search ES
family): their config schemas, beside :mod:`neuroplug_algorithms.novelty_es`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.algorithm_configs`` entry points
``ns_es``, ``nsr_es``, ``nsra_es``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from neuroplug.errors import require
from neuroplug.evaluation.behaviors import ALLOWED, is_known, resolve
from neuroplug_algorithms.es_config import ESStepConfig

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec


@dataclass
class NSESConfig(ESStepConfig):
    """NS-ES (Conti et al. 2018, Algorithm 1): a meta-population of OpenAI ES centers that
    follow behavioral novelty alone; also NSR-ES (Algorithm 2), whose update averages the
    centered ranks of reward and of novelty (w = 1/2). The ES fields are OpenAI ES's (the
    paper's MuJoCo defaults), the novelty ones the paper's.

    The ``auto`` behavior is the final RAM on Atari, the final x(,y) position on MuJoCo and
    the final observation on classic control (:mod:`neuroplug.evaluation.behaviors`). The
    paper's populations were thousands of members; this one is sized for one desktop CPU.
    """

    meta_population_size: int = 3
    """M: ES centers searching at once (paper: 3 on Atari, 5 on Humanoid)."""
    k: int = 10
    """Nearest archive neighbours a behavior's novelty averages over."""
    behavior: str = "auto"
    """Behavior characterisation: auto, final_obs, final_position or final_ram."""
    center_episodes: int = 1
    """Episodes an updated center plays to measure its return and behavior (paper: 1-5)."""

    def check_task(self, env: EnvSpec) -> None:
        """The behavior must be one ``env`` gives (``final_ram`` only on Atari, ...)."""
        resolve(self.behavior, env)

    def check(self) -> None:
        super().check()
        require(
            self.meta_population_size >= 1,
            "algo.meta_population_size",
            f"must be at least 1, got {self.meta_population_size}",
            "an integer >= 1",
        )
        require(self.k >= 1, "algo.k", f"must be at least 1, got {self.k}", "an integer >= 1")
        require(
            is_known(self.behavior),
            "algo.behavior",
            f"unknown behavior {self.behavior!r}",
            ALLOWED,
        )
        require(
            self.center_episodes >= 1,
            "algo.center_episodes",
            f"must be at least 1, got {self.center_episodes}",
            "an integer >= 1",
        )
        # The update mixes rank vectors of two signals; the paper shapes both by rank.
        require(
            self.fitness_shaping == "centered_ranks",
            "algo.fitness_shaping",
            f"the NS-ES family mixes centered ranks of returns and novelty, got {self.fitness_shaping!r}",
            "centered_ranks",
        )


@dataclass
class NSRAESConfig(NSESConfig):
    """NSRA-ES (Conti et al. 2018, Algorithm 3) settings: NS-ES's plus the adaptation of
    the reward weight ``w``, which rises whenever the best center return improves and falls
    after a stall. ``weight_delta`` and ``stall_generations`` are this implementation's."""

    initial_reward_weight: float = 1.0
    """``w`` at the start (1: reward only)."""
    weight_delta: float = 0.05
    """How much ``w`` moves on an improvement or a stall."""
    stall_generations: int = 10
    """Generations without a better center return before ``w`` decreases."""

    def check(self) -> None:
        super().check()
        require(
            0.0 <= self.initial_reward_weight <= 1.0,
            "algo.initial_reward_weight",
            f"got {self.initial_reward_weight}",
            "a float in [0, 1]",
        )
        require(
            0.0 < self.weight_delta <= 1.0,
            "algo.weight_delta",
            f"got {self.weight_delta}",
            "a float in (0, 1]",
        )
        require(
            self.stall_generations >= 1,
            "algo.stall_generations",
            f"got {self.stall_generations}",
            "an integer >= 1",
        )
