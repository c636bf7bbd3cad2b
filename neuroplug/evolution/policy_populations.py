"""A population per team or per agent of a multi-agent world (``env.policy_mapping``): K
algorithms of the run's class, one per policy, coevolving (predators against prey, one
team against another).

Each policy's algorithm is the one it would be alone (its own seed, streams, population,
state and checkpoint), and their members meet in the same games. A round::

    ask every policy still in the generation for its population (a policy whose generation
        has already ended waits, its deployed policy standing in as one member)
    join them into one population (:meth:`~neuroplug.population.members.Population.joined`)
        and play it as one arena (:mod:`neuroplug.evolution.coevolution`): in each of a
        member's E games every policy's agents are played by one of its members, drawn
        without replacement (a shuffle per policy and episode), so every member meets the
        other policies' members; its fitness is the mean return of its agents
    tell each policy its members' results, in order; the generation ends once every
        policy's has (so multi-round algorithms keep step: the others wait)

All of it is one population to the scheduler: every scheduler and Ray play it alike, in one
batched forward. The deployed policy is every policy: ``policy_params()`` is ``(K, D)``,
row k acting for the agents of the mapping's k-th name (as for learners,
:mod:`neuroplug.rl.agent_policies`). Coevolution in the sense of Rosin & Belew (1997) and
of competitive coevolution's predator-prey studies (Nolfi & Floreano 1998), members playing
members of the other population.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from neuroplug.api import Algorithm, AlgorithmConfig, AlgorithmContext, EvaluationResult
from neuroplug.envs.multi_agent.mapping import PolicyMapping, env_policies
from neuroplug.errors import PluginError
from neuroplug.evolution.rounds import generation_ended, round_marker
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import population_member_seed


class PolicyPopulations(Algorithm):
    """The populations of ``env.policy_mapping``, evolving side by side (module docstring)."""

    def __init__(
        self,
        config: AlgorithmConfig,
        context: AlgorithmContext,
        build: Callable[[AlgorithmContext], Algorithm],
    ) -> None:
        super().__init__(config, context)
        self.mapping: PolicyMapping = env_policies(context.env)
        self.policies: list[Algorithm] = []
        for policy in range(len(self.mapping)):
            seed = population_member_seed(context.seed, policy)
            policy_context = dataclasses.replace(
                context, seed=seed, initial_params=context.initializer(seed).float()
            )
            self.policies.append(build(policy_context))
        self.max_rounds_per_generation = len(self.policies) * max(
            policy.max_rounds_per_generation for policy in self.policies
        )
        self.waiting: list[bool] = [False] * len(self.policies)
        """Per policy: its generation has ended and it waits for the others'."""
        self.member_policies = np.zeros(0, dtype=np.int64)
        """The policy of each member of the population last asked."""
        self._asked: list[int] = []
        self._sizes: list[int] = []

    # ------------------------------------------------------------------ what a round asks

    @property
    def population_size(self) -> int:
        """Members a round plays: every policy's population."""
        return sum(
            getattr(policy, "population_size", policy.config.population_size)
            for policy in self.policies
        )

    def _agreed(self, what: str, read: Callable[[Algorithm], Any]) -> Any:
        """What the policies in play agree on (one request serves them all)."""
        values = {read(self.policies[k]) for k in self._in_play()}
        if len(values) != 1:
            raise PluginError(
                f"the populations of env.policy_mapping={self.mapping.names} ask for "
                f"different {what} ({sorted(values)}) in one round; their algorithm must "
                "ask every policy alike"
            )
        return values.pop()

    def _in_play(self) -> list[int]:
        return [k for k, waiting in enumerate(self.waiting) if not waiting]

    def episodes_per_member(self) -> int:
        return self._agreed("episodes per member", lambda p: p.episodes_per_member())

    def behavior(self) -> str | None:
        return self._agreed("behaviors", lambda p: p.behavior())

    def action_noise(self) -> float:
        return self._agreed("action noise", lambda p: p.action_noise())

    def action_temperature(self) -> float:
        return self._agreed("action temperatures", lambda p: p.action_temperature())

    def wants_transitions(self) -> bool:
        return any(policy.wants_transitions() for policy in self.policies)

    # ------------------------------------------------------------------ ask / tell

    def ask(self) -> Population:
        """Every policy's population in play, joined (a waiting policy: its deployed one)."""
        parts, owners = [], []
        self._asked = self._in_play()
        for k, policy in enumerate(self.policies):
            if self.waiting[k]:
                part = Population.dense(policy.policy_params().float().unsqueeze(0))
            else:
                part = policy.ask()
            parts.append(part)
            owners.append(np.full(len(part), k, dtype=np.int64))
        self._sizes = [len(part) for part in parts]
        self.member_policies = np.concatenate(owners)
        return Population.joined(parts)

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        """Each policy in play learns from its members' games; ``policy/<name>/<key>``."""
        stats: dict[str, float] = {}
        starts = np.cumsum([0, *self._sizes])
        for k in self._asked:
            rows = np.arange(starts[k], starts[k + 1])
            policy, name = self.policies[k], self.mapping.names[k]
            before = round_marker(policy)
            told = policy.tell(population.subset(rows), _rows(result, rows))
            self.waiting[k] = generation_ended(policy, before)
            stats[f"policy/{name}/return_mean"] = float(result.returns[rows].mean())
            stats.update({f"policy/{name}/{key}": value for key, value in told.items()})
        if all(self.waiting):
            self.waiting = [False] * len(self.policies)
            self.generation += 1
        else:
            self.continue_generation()
        return stats

    # ------------------------------------------------------------------ deployed, state

    def policy_params(self) -> torch.Tensor:
        """``(K, D)``: every policy's deployed parameters, row k the mapping's k-th."""
        return torch.stack([policy.policy_params().float() for policy in self.policies])

    @property
    def best_params(self) -> torch.Tensor | None:  # type: ignore[override]
        """``(K, D)``: each policy's best member so far (None where one keeps none)."""
        best = [policy.best_params for policy in self.policies]
        return None if any(params is None for params in best) else torch.stack(best)

    @best_params.setter
    def best_params(self, value: torch.Tensor | None) -> None:
        """The base class's assignment (None); each policy keeps its own."""

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "rounds_requested": self.rounds_requested,
            "waiting": list(self.waiting),
            "policies": [policy.state_dict() for policy in self.policies],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state["policies"]) != len(self.policies):
            raise ValueError(
                f"the checkpoint holds {len(state['policies'])} populations; "
                f"env.policy_mapping gives {len(self.policies)} ({', '.join(self.mapping.names)})"
            )
        self.generation = int(state["generation"])
        self.rounds_requested = int(state["rounds_requested"])
        self.waiting = [bool(flag) for flag in state["waiting"]]
        for policy, policy_state in zip(self.policies, state["policies"], strict=True):
            policy.load_state_dict(policy_state)

    def close(self) -> None:
        for policy in self.policies:
            policy.close()

    def describe(self) -> str:
        """The policies and the agents each evolves for."""
        words = self.mapping.words(self.context.env.agents)
        return f"{len(self.mapping)} populations coevolving: {words}"


def _rows(result: EvaluationResult, rows: np.ndarray) -> EvaluationResult:
    """``result`` for the members ``rows`` alone (counters are the whole round's)."""
    return dataclasses.replace(
        result,
        returns=result.returns[rows],
        lengths=result.lengths[rows],
        behaviors=None if result.behaviors is None else result.behaviors[rows],
        obs_stats=None,
    )
