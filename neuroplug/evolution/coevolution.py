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
    a generation's end   every snapshot_interval generations the deployed policy joins
                         the hall of fame (its oldest beyond pool_size retired), rated as
                         the population is then

The hall of fame is :class:`~neuroplug.opponents.pool.OpponentPool`'s snapshots, the
population its learner: OpenSkill ratings of the population (the games its members played
against each entry) and of each entry, ``selfplay/...`` metrics and the tournament table
every generation, and a checkpoint that holds them (a resumed run draws the games the
uninterrupted one would). The way Ha's estool evolved SlimeVolley agents (GA self-play,
members against each other) and the hall of fame of coevolution (Rosin & Belew 1997).
A population per policy (``env.policy_mapping`` other than ``shared``) plays its games in
:mod:`neuroplug.evolution.policy_arena`.
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
    halls: np.ndarray | None = None
    """A population per policy: ``(W, K)`` the hall-of-fame entry of each policy seated in
    each world (:data:`LIVE`: that policy's members; :mod:`neuroplug.evolution.policy_arena`)."""


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

    def stage(self, population: Population, request: EvaluationRequest) -> Staged:
        """``population``'s episodes of ``request`` as an arena's (the games drawn now)."""
        members, episodes, k = len(population), request.episodes_per_member, self.agents
        rng = arena_rng(self.seed, request)
        entries = self._entries()
        # The pool's draws as its results stand now (nothing is recorded while staging).
        table = self.pool.draw_table() if self.pool is not None else None
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
                drawn = table.draw(rng)
                if drawn == LIVE and not waiting and entries:
                    drawn = table.draw_other(rng)
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
        numbered = world_episodes(game_of_world, k)
        return Staged(
            population=joined.subset(arena_members),
            request=replace(request, episodes_per_member=1, episodes=numbered),
            counted=counted,
            world=world_of,
            opponent=np.asarray(opponents, dtype=np.int64),
            rated=np.asarray(rated, dtype=bool).reshape(-1, k),
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
        return appended(population, [self.pool.entries[id_].model for id_ in entries])

    # ------------------------------------------------------------------ folding

    def fold(self, staged: Staged, result: EvaluationResult) -> EvaluationResult:
        """The arena's result as the population's ``(P, E)`` (:func:`member_episodes`);
        the games' outcomes go to the pool (and the ratings)."""
        if self.pool is not None:
            returns = result.returns.reshape(-1, self.agents)
            for game, opponent in enumerate(staged.opponent.tolist()):
                mine = staged.rated[game]
                outcome = game_outcome(returns[game][mine], returns[game][~mine])
                self.pool.record(int(opponent), outcome, self.rating)
        return member_episodes(staged, result, self.agents)

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
            self.pool.load_state_dict(state, lambda params: params, no_bots)


def no_bots(target: str):
    """A checkpoint's bot, refused: a hall of fame holds parameters only."""
    raise ValueError(f"a coevolution checkpoint holds no bots, and names {target!r}")


def arena_rng(seed: int, request: EvaluationRequest) -> np.random.Generator:
    """The stream a round's games are drawn from: the run's (seed, generation, round)."""
    return self_play_rng(seed, request.generation * ROUNDS_PER_GENERATION + request.round)


def world_episodes(game_of_world: list[int], agents: int) -> np.ndarray:
    """The arena's episode number of each agent of each world: world ``w``'s agent ``a``
    plays episode ``g k + a``, ``g`` the game of its members' it is, so a member's e-th game
    is played in the world a lone member's e-th world would be (its seed that of episode
    e k): every member's e-th game starts from the same conditions (common random numbers)."""
    games = np.asarray(game_of_world, dtype=np.int64)
    return np.repeat(games, agents) * agents + np.tile(
        np.arange(agents, dtype=np.int64), len(games)
    )


def appended(population: Population, extra: list[torch.Tensor]) -> Population:
    """``population`` with the ``(D,)`` parameters ``extra`` (a hall of fame's) appended
    as members of their own."""
    if not extra:
        return population
    return Population.joined([population, Population.dense(torch.stack(extra).float())])


def member_episodes(staged: Staged, result: EvaluationResult, agents: int) -> EvaluationResult:
    """The arena's ``result`` as the population's ``(P, E)``: each episode the mean return
    of the member's agents in its game, its length theirs, its behavior its first agent's."""
    returns = result.returns.reshape(-1, agents)
    lengths = result.lengths.reshape(-1, agents)
    counted, world = staged.counted, staged.world
    member_returns = (returns[world] * counted).sum(-1) / counted.sum(-1)
    member_lengths = np.where(counted, lengths[world], 0).max(-1)
    behaviors = None
    if result.behaviors is not None:
        per_agent = result.behaviors.reshape(len(returns), agents, -1)[world]  # (P, E, k, d)
        first = counted.argmax(-1)
        behaviors = np.take_along_axis(per_agent, first[..., None, None], axis=2)[:, :, 0]
    return replace(
        result,
        returns=member_returns,
        lengths=member_lengths.astype(np.int64),
        behaviors=behaviors,
    )
