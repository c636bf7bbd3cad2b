"""``algo=pbt``: population-based training of any learner, the population acting as one.

Jaderberg et al. (2017), "Population Based Training of Neural Networks", arXiv:1711.09846,
with Sample Factory's rules (Petrenko et al. 2020, ``sample_factory/pbt/
population_based_training.py``). K members of one learner (``algo.learner``) train side by
side (:mod:`neuroplug.rl.learner_population`: one sampler, one batched forward per step for
all members, each member learning from its own envs). Every ``interval_frames`` frames of
each member, once it has played ``start_frames``::

    objective_k = mean true score of member k's last objective_games games
    top, bottom = the best and the worst ``quantile`` of the members by objective
                  (a member with no game since it started or copied is not ranked)
    for each member k (but the reference member 0, which is never changed):
        if k in bottom:                                                       (exploit)
            j = a random member of top
            if objective_j - objective_k > max(margin * |objective_k|, margin_absolute):
                k copies j's weights, optimizer state and settings; k's recent games clear
        for each mutable setting s, with probability mutation_probability:    (explore)
            f ~ U[factor_low, factor_high];  s <- s * f or s / f, equally likely
            (a discount changes 1 - s instead), held within the learner's bounds

Each change is a row of ``lineage.csv`` in the run dir. The deployed policy is the member
with the best objective.

Where it departs from Sample Factory, and why:

- The whole population acts in one heterogeneous batched forward on one set of envs
  (Sample Factory gives each policy its own share of workers and its own inference); that
  is the point of neuroplug: K learners cost little more sampling than one.
- The members step in lockstep, so all of them are due together: one round ranks everyone
  on the same objectives (Sample Factory checks each policy when its own counter passes).
- The reference member (``reference_member``, on by default as Sample Factory's policy 0)
  is neither mutated nor replaced: a baseline that stays what it was started as.
- Members may start from spread settings (``initial`` ranges, log-uniform for rates, or
  ``per_member`` values); Sample Factory starts them all alike.
- PPO members on an MLP learn as one computation over members
  (:mod:`neuroplug_learners.ppo_stacked`: their minibatches stacked, one
  batched forward and backward per gradient step, each member's own Adam state and
  settings); other members learn one by one, as they would alone. APPO members learn
  synchronously from each rollout (the population is the unit that waits); DQN members
  read their epsilon once per rollout.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from neuroplug.api import LearnerContext, Mutable
from neuroplug.envs.multi_agent.mapping import PolicyMapping, env_policies
from neuroplug.rl.agent_policies import policy_shares
from neuroplug.rl.learner_population import LearnerPopulation
from neuroplug.runtime.seeds import population_rng
from neuroplug_learners.pbt_config import PBTConfig, learner_class


class PBT(LearnerPopulation):
    """Population-based training over :class:`~neuroplug.rl.learner_population.LearnerPopulation`."""

    config_class = PBTConfig

    def __init__(self, config: PBTConfig, context: LearnerContext) -> None:
        member_class = learner_class(config.learner)
        schema = member_class.config_class
        base = schema(**config.member)
        self.declared: dict[str, Mutable] = schema.mutable
        self.mutating = list(config.mutate or [])
        self.rng = population_rng(context.seed)
        env = context.env
        self.mapping: PolicyMapping | None = (
            env_policies(env) if env.agents and env.policy_mapping != "shared" else None
        )
        """A policy per team or agent: each member is a learner per policy, on its worlds."""
        count = 1 if self.mapping is None else len(self.mapping)
        self.policies = count
        # Learner i is member i // count's policy i % count; each its own starting values.
        learners = [
            dataclasses.replace(base, **self._initial_settings(config, i // count))
            for i in range(config.members * count)
        ]
        owners = None
        if self.mapping is not None:  # each learner its policy's share of its member's worlds
            learners = [
                policy_shares(settings, self.mapping)[0][i % count]
                for i, settings in enumerate(learners)
            ]
            _, lanes = policy_shares(base, self.mapping)
            owners = np.concatenate([m * count + lanes for m in range(config.members)])
        super().__init__(config, context, member_class, learners, config.objective_games, owners)
        self.groups = [np.arange(k, len(learners), count) for k in range(count)]
        """The learners ranked against each other: every member, or each policy's."""
        self.frames_at_last_round = 0
        self.rounds = 0
        self.copies = 0
        self.lineage: list[dict[str, Any]] = []

    def _initial_settings(self, config: PBTConfig, k: int) -> dict[str, float]:
        """Member ``k``'s starting values of the spread settings."""
        values: dict[str, float] = {}
        if not (config.reference_member and k == 0):
            for name, (low, high) in config.initial.items():
                if self.declared[name].log:
                    values[name] = float(np.exp(self.rng.uniform(np.log(low), np.log(high))))
                else:
                    values[name] = float(self.rng.uniform(low, high))
        for name, per_member in config.per_member.items():
            values[name] = float(per_member[k])
        return values

    def label(self, i: int) -> str:
        """Learner ``i`` as the metrics and the lineage name it: ``member<k>``, or with a
        policy per team ``member<k>/<policy>``."""
        if self.mapping is None:
            return f"member{i}"
        return f"member{i // self.policies}/{self.mapping.names[i % self.policies]}"

    # ------------------------------------------------------------------ exploit and explore

    def after_rollout(self) -> None:
        config = self.config
        # A member's frames: those of its learners (one, or one per policy on its worlds).
        played = sum(learner.env_steps for learner in self.members[: self.policies])
        frames = played * self.context.env.frame_skip
        if frames < config.start_frames:
            return
        if frames - self.frames_at_last_round < config.interval_frames:
            return
        self.frames_at_last_round = frames
        self.rounds += 1
        self.exploit_and_explore(frames)

    def exploit_and_explore(self, frames: int) -> None:
        """One round, in each group (every member, or each policy's learners): bottom
        learners copy top ones, every learner but the reference member's mutates."""
        config = self.config
        objectives = self.objectives()
        for group in self.groups:
            # Learners without a finished game since they started or copied are not ranked.
            known = group[~np.isnan(objectives[group])]
            count = max(1, round(len(known) * config.quantile)) if len(known) >= 2 else 0
            order = known[np.argsort(-objectives[known], kind="stable")]
            top, bottom = order[:count], set(order[len(order) - count :].tolist())
            for k in group.tolist():
                self._exploit_and_explore_one(k, top, bottom, objectives, frames)

    def _exploit_and_explore_one(
        self, k: int, top: np.ndarray, bottom: set[int], objectives: np.ndarray, frames: int
    ) -> None:
        """Learner ``k``'s part of a round (see :meth:`exploit_and_explore`)."""
        config = self.config
        if config.reference_member and k < self.policies:
            return
        member = self.members[k]
        before = self.settings(k)
        source = None
        if config.exploit and k in bottom:
            j = int(self.rng.choice(top))
            gap = objectives[j] - objectives[k]
            needed = max(config.margin * abs(objectives[k]), config.margin_absolute)
            if gap > needed:
                member.load_state_dict(self.members[j].state_dict())
                member.notices.clear()  # a resume's notices: this is no resume
                for name, value in self.settings(j).items():
                    setattr(member.config, name, value)
                self.recent[k].clear()
                source = j
                self.copies += 1
        self._explore(member)
        after = self.settings(k)
        if source is not None or after != before:
            row: dict[str, Any] = {
                "segment": self.segments + 1,
                "frames": frames,
                "member": k // self.policies,
                **(
                    {}
                    if self.mapping is None
                    else {"policy": self.mapping.names[k % self.policies]}
                ),
                "copied_from": "" if source is None else source // self.policies,
                "objective": objectives[k],
                "source_objective": "" if source is None else objectives[source],
            }
            for name in self.mutating:
                row[f"{name}_old"] = before[name]
                row[f"{name}_new"] = after[name]
            self.lineage.append(row)

    def _explore(self, member) -> None:
        """Each mutable setting changes with ``mutation_probability`` by a random factor."""
        config = self.config
        for name in self.mutating:
            if self.rng.random() >= config.mutation_probability:
                continue
            spec = self.declared[name]
            factor = self.rng.uniform(config.factor_low, config.factor_high)
            if self.rng.random() < 0.5:
                factor = 1.0 / factor
            value = getattr(member.config, name)
            value = 1.0 - (1.0 - value) * factor if spec.complement else value * factor
            setattr(member.config, name, spec.clip(float(value)))

    def settings(self, k: int) -> dict[str, float]:
        """Member ``k``'s current values of the settings that mutate."""
        return {name: float(getattr(self.members[k].config, name)) for name in self.mutating}

    # ------------------------------------------------------------------ record and state

    def segment_stats(self) -> dict[str, float]:
        stats = super().segment_stats()
        stats["pbt_rounds"] = float(self.rounds)
        stats["pbt_copies"] = float(self.copies)
        if self.mapping is not None:
            del stats["best_member"]
            for k, name in enumerate(self.mapping.names):
                stats[f"policy/{name}/best_member"] = float(self._best_of(self.groups[k]))
            for i in range(len(self.members)):
                stats[f"{self.label(i)}/objective"] = stats.pop(f"member{i}/objective")
        for k in range(len(self.members)):
            for name, value in self.settings(k).items():
                stats[f"{self.label(k)}/{name}"] = value
        return stats

    def describe(self) -> str:
        inner = super().describe()
        if self.mapping is None:
            return inner
        words = (
            f"each member a learner per policy, {len(self.mapping)} policies: "
            f"{self.mapping.words(self.context.env.agents)}"
        )
        return f"{words}; {inner}" if inner else words

    def _best_of(self, group: np.ndarray) -> int:
        """The member whose learner of ``group`` has the best objective (the first, when
        none has finished a game)."""
        objectives = self.objectives()[group]
        return int(np.argmax(np.where(np.isnan(objectives), -np.inf, objectives)))

    def policy_params(self) -> torch.Tensor:
        """The best member's policy; with a policy per team, ``(K, D)``: each policy's best
        member's."""
        if self.mapping is None:
            return super().policy_params()
        return torch.stack(
            [
                self.members[int(group[self._best_of(group)])].policy_params()
                for group in self.groups
            ]
        )

    def segment_tables(self) -> dict[str, list[dict[str, Any]]]:
        rows, self.lineage = self.lineage, []
        return {"lineage": rows}

    def _state(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "frames_at_last_round": self.frames_at_last_round,
            "rounds": self.rounds,
            "copies": self.copies,
            "settings": [
                {name: getattr(member.config, name) for name in self.declared}
                for member in self.members
            ],
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.frames_at_last_round = int(state["frames_at_last_round"])
        self.rounds = int(state["rounds"])
        self.copies = int(state["copies"])
        for member, settings in zip(self.members, state["settings"], strict=True):
            for name, value in settings.items():
                setattr(member.config, name, value)
