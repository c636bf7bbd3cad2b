"""Games between two players in a multi-agent env's worlds, and their score with a
confidence interval: what ``neuroplug.tools.match`` prints and what a self-play run's
evaluation against ``selfplay.eval_opponent`` logs.

A player is a network with its parameters (greedy, as a run evaluates its policy: the
argmax of discrete outputs, the ``tanh`` of continuous ones scaled into the box), a
scripted bot, or anything with :meth:`Player.act`. In a symmetric game the first player
takes agent ``g mod k`` of game ``g``, so every seat is played equally; with a team
(``selfplay.learner_agents``) it plays those agents in every game. A game is the first
player's win when its agents' mean score beats the opponent agents', a draw when equal;
the score rate counts draws half, its 95% interval Wilson's. Games run in worlds side by
side, each player one batched forward a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from neuroplug.envs.multi_agent.lanes import agent_score
from neuroplug.envs.spec import EnvSpec

WORLDS = 16
"""Games played side by side."""


@dataclass
class MatchResult:
    """What a match gave the first player."""

    games: int
    wins: int
    draws: int
    losses: int
    score_rate: float
    """(wins + draws / 2) / games."""
    interval: tuple[float, float]
    """Wilson's 95% interval of the score rate."""
    scores: list[tuple[float, float]] = field(default_factory=list)
    """Each game's (first player's, opponent's) mean score of its agents."""

    def describe(self) -> str:
        """One line: the games, their outcomes and the score rate with its interval."""
        low, high = self.interval
        return (
            f"{self.games} games, {self.wins} won, {self.draws} drawn, {self.losses} lost; "
            f"score rate {self.score_rate:.3f} [{low:.3f}, {high:.3f}] (95%, Wilson)"
        )


def wilson(successes: float, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval of a proportion."""
    if trials == 0:
        return (math.nan, math.nan)
    rate = successes / trials
    scale = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / scale
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials**2)) / scale
    return (max(0.0, centre - half), min(1.0, centre + half))


class Player:
    """Acts for a batch of agents' observations (as the learner sees them)."""

    name: str = ""

    def act(self, observations: np.ndarray, states: Any, rng: np.random.Generator):
        """``(actions, new recurrent states or None)``."""
        raise NotImplementedError


class BotPlayer(Player):
    """A scripted bot (:mod:`neuroplug.opponents.bots`)."""

    def __init__(self, name: str, bot) -> None:
        self.name, self.bot = name, bot

    def act(self, observations, states, rng):
        return np.asarray(self.bot(observations, rng)), None


class NetworkPlayer(Player):
    """A network's member ``params`` acting greedily through ``policy`` (its observation
    handling and action head: :class:`neuroplug.nets.policy.Policy`)."""

    def __init__(self, name: str, network, params: torch.Tensor, policy) -> None:
        self.name, self.network, self.policy = name, network, policy
        self.params = params.detach().float().cpu()

    @torch.no_grad()
    def act(self, observations, states, rng):
        inputs = self.policy.prepare(observations, torch.device("cpu"))
        network = self.network
        if network.state_size:
            if states is None:
                states = torch.zeros((len(observations), network.state_size))
            features, states = network.features_with_state(self.params, inputs, states)
            outputs = network.head(self.params, features)
        else:
            outputs = network.forward_single(self.params, inputs)
        return self.policy.actions(outputs), states


def play_match(
    first: Player,
    second: Player,
    env: EnvSpec,
    team: list[int],
    games: int,
    seed: int = 0,
    max_steps: int | None = None,
    recorder=None,
) -> MatchResult:
    """``games`` games of ``first`` against ``second`` in ``env``'s worlds, ``first`` on
    the agents ``team`` (empty: agent ``g mod k`` of game ``g``); ``recorder`` (with an
    ``add(frame)``) gets the first game's frames."""
    rng = np.random.default_rng(seed)
    result = MatchResult(games, 0, 0, 0, math.nan, (math.nan, math.nan))
    for start in range(0, games, WORLDS):
        batch = list(range(start, min(games, start + WORLDS)))
        watched = recorder if start == 0 else None
        result.scores += _play(batch, first, second, env, team, seed, max_steps, rng, watched)
    for mine, theirs in result.scores:
        if mine > theirs:
            result.wins += 1
        elif mine == theirs:
            result.draws += 1
        else:
            result.losses += 1
    points = result.wins + 0.5 * result.draws
    result.score_rate = points / games
    result.interval = wilson(points, games)
    return result


def _play(batch, first, second, env, team, seed, max_steps, rng, recorder):
    """Games ``batch`` side by side; each game's (first's, second's) mean agent score."""
    maker, agents = env.maker, env.agents
    k = len(agents)
    worlds = [
        maker.make(**({"render_mode": "rgb_array"} if recorder and w == 0 else {}))
        for w in range(len(batch))
    ]
    seen = [world.reset(seed=seed + game)[0] for world, game in zip(worlds, batch, strict=True)]
    mine = [team or [game % k] for game in batch]
    totals = np.zeros((len(batch), k))
    alive = np.ones(len(batch), dtype=bool)
    lane_states: dict[tuple[int, int], torch.Tensor] = {}
    """A recurrent player's state per (world, agent), kept through its game."""
    steps = 0
    if recorder is not None:
        recorder.add(worlds[0].render())
    while alive.any() and (max_steps is None or steps < max_steps):
        rows: dict[int, list] = {0: [], 1: []}
        for w in np.flatnonzero(alive):
            for i, agent in enumerate(agents):
                if agent in worlds[w].agents:  # one that left its world no longer acts
                    rows[0 if i in mine[w] else 1].append(
                        (w, i, maker.observe(agent, seen[w][agent]))
                    )
        chosen = {}
        for side, player in ((0, first), (1, second)):
            if rows[side]:
                observations = np.stack([row[2] for row in rows[side]])
                lanes = [(w, i) for w, i, _ in rows[side]]
                actions, states = player.act(observations, _gather(lane_states, lanes), rng)
                for index, (lane, action) in enumerate(zip(lanes, actions, strict=True)):
                    chosen[lane] = action
                    if states is not None:
                        lane_states[lane] = states[index]
        for w in np.flatnonzero(alive):
            step = {
                agent: _native(chosen[(w, i)]) for i, agent in enumerate(agents) if (w, i) in chosen
            }
            seen[w], rewards, ended, cut, infos = worlds[w].step(step)
            totals[w] += [agent_score(infos, agent, rewards.get(agent, 0.0)) for agent in agents]
            if recorder is not None and w == 0:
                recorder.add(worlds[0].render())
            if all(ended.get(a) or cut.get(a) for a in agents) or not worlds[w].agents:
                alive[w] = False
        steps += 1
    for world in worlds:
        world.close()
    scores = []
    for w in range(len(batch)):
        ours = np.zeros(k, dtype=bool)
        ours[mine[w]] = True
        scores.append((float(totals[w][ours].mean()), float(totals[w][~ours].mean())))
    return scores


def _gather(lane_states: dict, lanes: list) -> torch.Tensor | None:
    """The lanes' recurrent states (zeros for a lane's first step), None before any."""
    known = [lane_states.get(lane) for lane in lanes]
    first = next((state for state in known if state is not None), None)
    if first is None:
        return None
    return torch.stack([torch.zeros_like(first) if state is None else state for state in known])


def _native(action):
    """An action as PettingZoo envs take it."""
    action = np.asarray(action)
    return int(action) if action.dtype.kind in "iu" else action.astype(np.float32)
