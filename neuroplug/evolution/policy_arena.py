"""The games of a population per policy (:mod:`neuroplug.evolution.policy_populations`):
each policy's members seated on its own agents against the other policies' members or
their halls of fame.

A round of P_1 + ... + P_K members x E episodes is staged as one arena population (as
:mod:`neuroplug.evolution.coevolution` stages one population's), drawn before anything is
played from the run's (seed, generation, round) stream::

    each episode, each policy's members in a shuffled order, each member of policy p:
      with selfplay=pool and every other policy's hall of fame holding an entry, with
        probability 1 - latest_share: a game of its own against the halls: an entry of
        each other policy's hall (uniform, or PFSP on the challengers' win rate against
        it) on that policy's agents; only the member counts, and the outcome goes to
        those halls
      else: live; world w of the episode's live games seats the w-th live member of
        every policy on its agents (all of them count); a policy with fewer live members
        fills the further worlds with members drawn at random, whose games there do not
        count
    a generation's end: every snapshot_interval generations each policy's deployed
      parameters join its own hall of fame (the oldest beyond pool_size retired)

Without ``selfplay=pool`` every game is live: the populations only meet each other.
Hall ``q``'s pool (:class:`~neuroplug.opponents.pool.OpponentPool`) rates its entries
against their challengers, the other policies' members: ``selfplay/<q>_hall/...`` metrics
(the challengers' rating and win rate against q's entries) and tournament rows with a
``hall`` column. A member's fitness is its own agents' mean return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from neuroplug.api import EvaluationRequest, EvaluationResult
from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.evolution.coevolution import (
    Staged,
    appended,
    arena_rng,
    member_episodes,
    no_bots,
    world_episodes,
)
from neuroplug.opponents.halls import draw_against_halls
from neuroplug.opponents.pool import LIVE, DrawTable, OpponentPool, pool_for
from neuroplug.opponents.ratings import rating_model
from neuroplug.opponents.seating import game_outcome
from neuroplug.population.members import Population


class PolicyArena:
    """The games of a population per policy (see the module docstring)."""

    def __init__(
        self,
        config: SelfPlayConfig | None,
        env: EnvSpec,
        seed: int,
        num_params: int,
        member_policies: Callable[[], np.ndarray],
    ) -> None:
        self.config = config
        self.seed = seed
        self.mapping = env_policies(env)
        self.of_agent = np.asarray(self.mapping.of_agent, dtype=np.int64)
        self.agents = len(env.agents)
        self.member_policies = member_policies
        """Each member's policy in the population last asked (the algorithm's)."""
        self.halls: list[OpponentPool] = []
        self.rating = None
        if config is not None:
            # Refused where every population's hall together would not fit.
            count = len(self.mapping)
            self.halls = [
                pool_for(
                    config,
                    num_params * 4 * count,
                    f"hall-of-fame policies of {num_params:,} parameters for each of "
                    f"{count} populations",
                )
                for _ in self.mapping.names
            ]
            self.rating = rating_model()

    # ------------------------------------------------------------------ staging

    def stage(self, population: Population, request: EvaluationRequest) -> Staged:
        """``population``'s episodes of ``request`` as an arena's (the games drawn now)."""
        owners = self.member_policies()
        members, episodes, k = len(population), request.episodes_per_member, self.agents
        policies = len(self.mapping)
        rng = arena_rng(self.seed, request)
        groups = [np.flatnonzero(owners == policy) for policy in range(policies)]
        entries = [[entry.id for entry in hall.candidates()] for hall in self.halls]
        # Each hall's draws as its results stand now (nothing is recorded while staging).
        tables = [hall.draw_table() for hall in self.halls]
        seat_of: dict[tuple[int, int], int] = {}  # (policy, entry id) -> its arena member
        extra: list[torch.Tensor] = []
        for policy, ids in enumerate(entries):
            for id_ in ids:
                seat_of[(policy, id_)] = members + len(extra)
                extra.append(self.halls[policy].entries[id_].model)
        counted = np.zeros((members, episodes, k), dtype=bool)
        world_of = np.zeros((members, episodes), dtype=np.int64)
        seats: list[np.ndarray] = []  # per world, the arena member of each agent
        halls: list[np.ndarray] = []
        rated: list[np.ndarray] = []
        games: list[int] = []  # per world, which of its members' games it is

        def world(seated: np.ndarray, drawn: np.ndarray, mine: np.ndarray, episode: int) -> int:
            seats.append(seated)
            halls.append(drawn)
            rated.append(mine)
            games.append(episode)
            return len(seats) - 1

        for episode in range(episodes):
            live: list[list[int]] = [[] for _ in range(policies)]
            for policy, group in enumerate(groups):
                mine = self.of_agent == policy
                for member in rng.permutation(group).tolist():
                    drawn = self._draw(policy, tables, rng)
                    if drawn is None:
                        live[policy].append(member)
                        continue
                    seated = np.empty(k, dtype=np.int64)
                    for other in range(policies):
                        entry = member if other == policy else seat_of[(other, int(drawn[other]))]
                        seated[self.of_agent == other] = entry
                    counted[member, episode] = mine
                    world_of[member, episode] = world(seated, drawn, mine, episode)
            for index in range(max(len(players) for players in live)):
                seated = np.empty(k, dtype=np.int64)
                playing: list[int] = []
                for policy, group in enumerate(groups):
                    players = live[policy]
                    member = players[index] if index < len(players) else int(rng.choice(group))
                    seated[self.of_agent == policy] = member
                    if index < len(players):
                        playing.append(member)
                at = world(seated, np.full(policies, LIVE), np.ones(k, dtype=bool), episode)
                for member in playing:
                    counted[member, episode] = self.of_agent == owners[member]
                    world_of[member, episode] = at
        return Staged(
            population=appended(population, extra).subset(np.concatenate(seats)),
            request=replace(request, episodes_per_member=1, episodes=world_episodes(games, k)),
            counted=counted,
            world=world_of,
            opponent=np.full(len(seats), LIVE, dtype=np.int64),
            rated=np.asarray(rated, dtype=bool).reshape(-1, k),
            halls=np.asarray(halls, dtype=np.int64).reshape(-1, policies),
        )

    def _draw(
        self,
        policy: int,
        tables: list[DrawTable],
        rng: np.random.Generator,
    ) -> np.ndarray | None:
        """A member of ``policy``'s opponents: None (live), or each policy's hall entry
        (:data:`LIVE` at ``policy`` itself); live while another policy's hall is empty."""
        if not self.halls:
            return None
        drawn = draw_against_halls(policy, tables, rng)
        return None if drawn is None else np.asarray(drawn, dtype=np.int64)

    # ------------------------------------------------------------------ folding

    def fold(self, staged: Staged, result: EvaluationResult) -> EvaluationResult:
        """The arena's result as the population's ``(P, E)``; the games against halls of
        fame go to those halls (and their ratings)."""
        if self.halls:
            returns = result.returns.reshape(-1, self.agents)
            for game, drawn in enumerate(staged.halls.tolist()):
                if all(entry == LIVE for entry in drawn):
                    continue
                mine = staged.rated[game]
                outcome = game_outcome(returns[game][mine], returns[game][~mine])
                for policy, entry in enumerate(drawn):
                    if entry != LIVE:
                        self.halls[policy].record(int(entry), outcome, self.rating)
        return member_episodes(staged, result, self.agents)

    # ------------------------------------------------------------------ generations

    def start_generation(self) -> None:
        """Begin the generation's counts."""
        for hall in self.halls:
            hall.start_segment()

    def end_generation(
        self, generation: int, policy_params: Callable[[], torch.Tensor]
    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """Each hall's ``selfplay/<name>_hall/...`` metrics and tournament rows; then, every
        ``snapshot_interval`` generations, each policy's row of ``policy_params()``
        (``(K, D)``) joins its own hall."""
        if not self.halls:
            return {}, []
        stats: dict[str, float] = {}
        rows: list[dict[str, Any]] = []
        for name, hall in zip(self.mapping.names, self.halls, strict=True):
            rows += [{"generation": generation + 1, "hall": name, **row} for row in hall.table()]
            for key, value in hall.report().items():
                stats[key.replace("selfplay/", f"selfplay/{name}_hall/", 1)] = value
        if self.config.pool_size and (generation + 1) % self.config.snapshot_interval == 0:
            deployed = policy_params().detach().float().cpu()
            for policy, hall in enumerate(self.halls):
                hall.add_snapshot(deployed[policy].clone(), generation + 1)
        for hall in self.halls:
            hall.drop_unused(set())
        return stats, rows

    def state_dict(self) -> dict[str, Any]:
        """Every hall of fame (parameters, results, ratings); nothing without halls."""
        return {"halls": [hall.state_dict(lambda params: params) for hall in self.halls]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        for hall, saved in zip(self.halls, state.get("halls", []), strict=False):
            hall.load_state_dict(saved, lambda params: params, no_bots)
