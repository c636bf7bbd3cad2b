"""Evolution in multi-agent worlds: each member's episodes are games, its fitness its own
agents' score, its opponents the population itself and a hall of fame of its past.

An evaluation of P members x E episodes in a world of k agents is staged as an *arena*:
a population of one member per agent of each world (the members themselves, repeated, and
the hall of fame's parameters appended as bases), played one episode each by the run's
scheduler like any population (every scheduler and Ray play it alike: it is one
population in whole worlds), then folded back to the ``(P, E)`` result the algorithm asks
for::

    selfplay=none        each world is one member on every agent (a shared policy in a
                         cooperative task): its fitness the mean of its agents' returns
    selfplay=pool        game e of member i, drawn before anything is played from the
                         run's (seed, generation, round) stream:
                           with probability latest_share, or while the hall of fame is
                           empty: another member, the next of a random order, on the
                           other agents; the game is one of each member's E (both count)
                         else: an entry of the hall of fame (uniform, or AlphaStar's PFSP
                           on the population's win rate against it); only i counts
                         i takes selfplay.learner_agents (a team), or one agent drawn per
                         game (a symmetric game); a member left without a partner plays
                         an entry or, with none yet, itself
    a population per policy
                         (env.policy_mapping other than shared,
                         :mod:`neuroplug.evolution.policy_populations`): each episode
                         every policy's members shuffled, world w seating the w-th of
                         each on that policy's agents; each member's fitness its own
                         agents' mean return
    a generation's end   every snapshot_interval generations the deployed policy joins
                         the hall of fame (its oldest beyond pool_size retired), rated as
                         the population is then

The hall of fame is :class:`~neuroplug.opponents.pool.OpponentPool`'s snapshots, the
population its learner: OpenSkill ratings of the population (the games its members played
against each entry) and of each entry, ``selfplay/...`` metrics and the tournament table
every generation, and a checkpoint that holds them (a resumed run draws the games the
uninterrupted one would). The way Ha's estool evolved SlimeVolley agents (GA self-play,
members against each other) and the hall of fame of coevolution (Rosin & Belew 1997).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from neuroplug.api import EvaluationRequest, EvaluationResult
from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.opponents.pool import LIVE, OpponentPool, pool_for
from neuroplug.opponents.ratings import rating_model
from neuroplug.opponents.seating import game_outcome, learner_agent_indices
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import self_play_rng

ROUNDS_PER_GENERATION = 1_000
"""Spaces the draws of a generation's rounds apart in the self-play stream."""


@dataclass
class Staged:
    """One evaluation staged as an arena (see the module docstring)."""

    population: Population
    """One member per agent of each world: world ``w``'s agent ``a`` is member ``w k + a``."""
    request: EvaluationRequest
    """The caller's, one episode per arena member."""
    counted: np.ndarray
    """``(P, E, k)`` bool: the agents of world ``world[i, e]`` whose returns are member
    ``i``'s ``e``-th episode."""
    world: np.ndarray
    """``(P, E)`` the world of member ``i``'s ``e``-th game."""
    opponent: np.ndarray
    """``(W,)`` the pool entry each world's game was against (:data:`LIVE`: members only)."""
    rated: np.ndarray
    """``(W, k)`` bool: the agents whose score is the population's side of the game (the
    first counted member's)."""


class Arena:
    """A population's games in a multi-agent env (see the module docstring)."""

    def __init__(
        self, config: SelfPlayConfig | None, env: EnvSpec, seed: int, num_params: int
    ) -> None:
        self.config = config
        self.env = env
        self.seed = seed
        self.agents = len(env.agents)
        self.team = (
            learner_agent_indices(env.agents, config.learner_agents) if config is not None else []
        )
        self.pool: OpponentPool | None = None
        self.rating = None
        if config is not None:
            self.pool = pool_for(
                config, num_params * 4, f"hall-of-fame policies of {num_params:,} parameters"
            )
            self.rating = rating_model()

    # ------------------------------------------------------------------ staging

    def stage(
        self,
        population: Population,
        request: EvaluationRequest,
        member_policies: np.ndarray | None = None,
    ) -> Staged:
        """``population``'s episodes of ``request`` as an arena's (the games drawn now);
        with ``member_policies`` (each member's policy of ``env.policy_mapping``), the
        policies' populations against each other (:meth:`_stage_policies`)."""
        members, episodes, k = len(population), request.episodes_per_member, self.agents
        rng = self_play_rng(self.seed, request.generation * ROUNDS_PER_GENERATION + request.round)
        if member_policies is not None:
            return self._stage_policies(population, request, member_policies, rng)
        entries = self._entries()
        seats: list[np.ndarray] = []  # per world, the arena member of each agent
        opponents: list[int] = []
        rated: list[np.ndarray] = []
        counted = np.zeros((members, episodes, k), dtype=bool)
        world_of = np.zeros((members, episodes), dtype=np.int64)

        game_of_world: list[int] = []  # per world, which of its members' games it is

        def play(member: int, episode: int, agents: np.ndarray) -> None:
            counted[member, episode] = agents
            world_of[member, episode] = len(seats)

        for episode in range(episodes):
            waiting = deque(rng.permutation(members).tolist())  # this episode's order
            while waiting:
                first = waiting.popleft()
                if self.pool is None:  # a member on every agent
                    play(first, episode, np.ones(k, dtype=bool))
                    seats.append(np.full(k, first))
                    game_of_world.append(episode)
                    opponents.append(LIVE)
                    rated.append(np.ones(k, dtype=bool))
                    continue
                mine = self._seats(rng)
                drawn = self.pool.draw(rng)
                if drawn == LIVE and not waiting and entries:
                    drawn = self.pool.draw_other(rng)
                world = np.full(k, first)  # no partner and no entry yet: it plays itself
                if drawn == LIVE and waiting:
                    second = waiting.popleft()
                    world = np.where(mine, first, second)
                    play(second, episode, ~mine)
                elif drawn != LIVE:
                    world = np.where(mine, first, members + entries.index(drawn))
                play(first, episode, mine)
                seats.append(world)
                game_of_world.append(episode)
                opponents.append(drawn)
                rated.append(mine)
        arena_members = np.concatenate(seats) if seats else np.zeros(0, dtype=np.int64)
        joined = self._joined(population, entries)
        # A member's e-th game is played in the world a lone member's e-th world would be
        # (its seed that of episode e k): its games differ, and every member's e-th game
        # starts from the same conditions (common random numbers).
        games = np.asarray(game_of_world, dtype=np.int64)
        numbered = (np.repeat(games, k) * k + np.tile(np.arange(k), len(games))).astype(np.int64)
        return Staged(
            population=joined.subset(arena_members),
            request=replace(request, episodes_per_member=1, episodes=numbered),
            counted=counted,
            world=world_of,
            opponent=np.asarray(opponents, dtype=np.int64),
            rated=np.asarray(rated, dtype=bool).reshape(-1, k),
        )

    def _stage_policies(
        self,
        population: Population,
        request: EvaluationRequest,
        member_policies: np.ndarray,
        rng: np.random.Generator,
    ) -> Staged:
        """Games of a population per policy (:mod:`neuroplug.evolution.policy_populations`):
        each episode, every policy's members shuffled, world ``w`` seats the ``w``-th of
        each policy on that policy's agents; a policy with fewer members than the largest
        fills the further worlds with members drawn at random, whose games there do not
        count. A member's fitness is its own agents' mean return."""
        members, episodes, k = len(population), request.episodes_per_member, self.agents
        of_agent = np.asarray(env_policies(self.env).of_agent, dtype=np.int64)
        groups = [np.flatnonzero(member_policies == policy) for policy in range(of_agent.max() + 1)]
        worlds = max(len(group) for group in groups)
        counted = np.zeros((members, episodes, k), dtype=bool)
        world_of = np.zeros((members, episodes), dtype=np.int64)
        seats = np.zeros((episodes, worlds, k), dtype=np.int64)
        for episode in range(episodes):
            for policy, group in enumerate(groups):
                agents = of_agent == policy
                order = rng.permutation(group)
                extra = rng.choice(group, size=worlds - len(group))
                seats[episode][:, agents] = np.concatenate([order, extra])[:, None]
                for world, member in enumerate(order.tolist()):
                    counted[member, episode] = agents
                    world_of[member, episode] = episode * worlds + world
        games = np.repeat(np.arange(episodes, dtype=np.int64), worlds)
        numbered = (np.repeat(games, k) * k + np.tile(np.arange(k), len(games))).astype(np.int64)
        return Staged(
            population=population.subset(seats.reshape(-1)),
            request=replace(request, episodes_per_member=1, episodes=numbered),
            counted=counted,
            world=world_of,
            opponent=np.full(len(games), LIVE, dtype=np.int64),
            rated=np.ones((len(games), k), dtype=bool),
        )

    def _seats(self, rng: np.random.Generator) -> np.ndarray:
        """The agents the first member takes in a game: the team, or one drawn."""
        mine = np.zeros(self.agents, dtype=bool)
        if self.team:
            mine[self.team] = True
        else:
            mine[int(rng.integers(self.agents))] = True
        return mine

    def _entries(self) -> list[int]:
        """The pool ids of the hall of fame in play (a world's index of an entry)."""
        return [] if self.pool is None else [entry.id for entry in self.pool.candidates()]

    def _joined(self, population: Population, entries: list[int]) -> Population:
        """``population`` with the hall of fame's parameters appended as members."""
        if not entries:
            return population
        extra = torch.stack([self.pool.entries[id_].model for id_ in entries]).float()
        bases = population.base_params()
        base_count = len(bases)
        sigma = population.sigma
        if sigma is not None:
            sigma = torch.cat([sigma, torch.ones(len(extra), sigma.shape[1]).to(sigma)])
        added = len(extra)
        return Population(
            torch.cat([bases, extra.to(bases)]),
            torch.cat([population.base_index, torch.arange(base_count, base_count + added)]),
            torch.cat([population.scale, torch.zeros(added)]),
            torch.cat([population.seed, torch.zeros(added, dtype=torch.int64)]),
            population.lowrank,
            sigma,
        )

    # ------------------------------------------------------------------ folding

    def fold(self, staged: Staged, result: EvaluationResult) -> EvaluationResult:
        """The arena's result as the population's ``(P, E)``: each episode the mean return
        of the member's agents in its game, its length theirs; the games' outcomes go to
        the pool (and the ratings)."""
        k = self.agents
        returns = result.returns.reshape(-1, k)
        lengths = result.lengths.reshape(-1, k)
        counted, world = staged.counted, staged.world
        mine_returns = returns[world]  # (P, E, k)
        member_returns = (mine_returns * counted).sum(-1) / counted.sum(-1)
        member_lengths = np.where(counted, lengths[world], 0).max(-1)
        behaviors = None
        if result.behaviors is not None:
            per_agent = result.behaviors.reshape(len(returns), k, -1)[world]  # (P, E, k, d)
            first = counted.argmax(-1)
            behaviors = np.take_along_axis(per_agent, first[..., None, None], axis=2)[:, :, 0]
        if self.pool is not None:
            for game, opponent in enumerate(staged.opponent.tolist()):
                mine = staged.rated[game]
                outcome = game_outcome(returns[game][mine], returns[game][~mine])
                self.pool.record(int(opponent), outcome, self.rating)
        return replace(
            result,
            returns=member_returns,
            lengths=member_lengths.astype(np.int64),
            behaviors=behaviors,
        )

    # ------------------------------------------------------------------ generations

    def start_generation(self) -> None:
        """Begin the generation's counts."""
        if self.pool is not None:
            self.pool.start_segment()

    def end_generation(
        self, generation: int, policy_params: Callable[[], torch.Tensor]
    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The generation's ratings and win rates (``selfplay/...``) and the tournament
        table's rows; then, every ``snapshot_interval`` generations, ``policy_params()``
        (called only then: a GA rebuilds its elite from seeds) join the hall of fame."""
        if self.pool is None:
            return {}, []
        # Numbered as metrics.csv numbers it (generations completed).
        rows = [{"generation": generation + 1, **row} for row in self.pool.table()]
        stats = self.pool.report()
        if self.config.pool_size and (generation + 1) % self.config.snapshot_interval == 0:
            self.pool.add_snapshot(policy_params().detach().float().cpu().clone(), generation + 1)
        self.pool.drop_unused(set())
        return stats, rows

    def state_dict(self) -> dict[str, Any]:
        """The hall of fame (its parameters, results, ratings); nothing without a pool."""
        return {} if self.pool is None else self.pool.state_dict(lambda params: params)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        if self.pool is not None and state:
            self.pool.load_state_dict(state, lambda params: params, _no_bots)


def _no_bots(target: str):
    raise ValueError(f"a coevolution checkpoint holds no bots, and names {target!r}")
