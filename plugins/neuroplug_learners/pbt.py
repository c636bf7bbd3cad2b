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

from neuroplug.api import LearnerContext, Mutable
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
        members = [
            dataclasses.replace(base, **self._initial_settings(config, k))
            for k in range(config.members)
        ]
        super().__init__(config, context, member_class, members, config.objective_games)
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

    # ------------------------------------------------------------------ exploit and explore

    def after_rollout(self) -> None:
        config = self.config
        frames = self.members[0].env_steps * self.context.env.frame_skip
        if frames < config.start_frames:
            return
        if frames - self.frames_at_last_round < config.interval_frames:
            return
        self.frames_at_last_round = frames
        self.rounds += 1
        self.exploit_and_explore(frames)

    def exploit_and_explore(self, frames: int) -> None:
        """One round: bottom members copy top ones, every member but the reference mutates."""
        config = self.config
        objectives = self.objectives()
        # Members without a finished game since they started or copied are not ranked.
        known = np.flatnonzero(~np.isnan(objectives))
        count = max(1, round(len(known) * config.quantile)) if len(known) >= 2 else 0
        order = known[np.argsort(-objectives[known], kind="stable")]
        top, bottom = order[:count], set(order[len(order) - count :].tolist())
        for k, member in enumerate(self.members):
            if config.reference_member and k == 0:
                continue
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
                    "member": k,
                    "copied_from": "" if source is None else source,
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
        for k in range(len(self.members)):
            for name, value in self.settings(k).items():
                stats[f"member{k}/{name}"] = value
        return stats

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
