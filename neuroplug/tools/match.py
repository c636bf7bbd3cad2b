"""Two policies against each other in a multi-agent game, with the score and a confidence
interval: ``python -m neuroplug.tools.match RUN --opponent OTHER``.

::

    python -m neuroplug.tools.match outputs/<run> --opponent random --games 200
    python -m neuroplug.tools.match outputs/<run> \\
        --opponent neuroplug.envs.multi_agent.games.pong_duel:tracking_bot
    python -m neuroplug.tools.match outputs/<run> --opponent outputs/<other run> --video m.mp4

``RUN`` is a run's output dir (or policy file, or shared folder); the opponent another such
source, ``random`` or a scripted bot (``package.module:function`` of ``(observations, rng)
-> actions``, as ``selfplay.bots``). Both act as deployed (greedy: the argmax of a discrete
policy's outputs, the mean of a continuous one). In a symmetric game the first player
takes agent ``g mod k`` of game ``g``, so every seat is played equally; with
``selfplay.learner_agents`` in the run's config it plays those agents in every game.
Games are won by the higher mean score of one's agents (draws count half in the score
rate, whose 95% interval is Wilson's). Games run in worlds side by side, each player one
batched forward a step. ``--video`` records the first game as the env draws it (every
agent in it).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from neuroplug.errors import NeuroplugError

WORLDS = 16
"""Games played side by side."""


class MatchError(NeuroplugError):
    """A match that cannot be played (one line, what to use instead)."""


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


def wilson(successes: float, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval of a proportion."""
    if trials == 0:
        return (math.nan, math.nan)
    rate = successes / trials
    centre = (rate + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials**2)) / (1 + z * z / trials)
    )
    return (max(0.0, centre - half), min(1.0, centre + half))


class Player:
    """A policy or a bot acting for a batch of agents' observations."""

    def __init__(self, source: str, env) -> None:
        self.name = source
        self.policy = None
        self.bot = None
        if source == "random" or (":" in source and not Path(source).exists()):
            from neuroplug.rl.self_play.bots import load_bot

            self.bot = load_bot(source, env)
        else:
            from neuroplug.deploy.loading import load_policy

            self.policy = load_policy(source)

    @torch.no_grad()
    def act(self, observations: np.ndarray, states, rng: np.random.Generator):
        """Actions for ``observations`` and the new recurrent states (None without)."""
        if self.bot is not None:
            return np.asarray(self.bot(observations, rng)), None
        inputs, _ = self.policy.prepare(observations)
        if self.policy.recurrent:
            if states is None:
                states = self.policy.initial_state(len(observations))
            outputs, states = self.policy.net(inputs, states)
        else:
            outputs, _ = self.policy.net(inputs)
        return self.policy.act(outputs).cpu().numpy(), states


def match(
    source: str | Path,
    opponent: str,
    games: int = 100,
    seed: int = 0,
    max_steps: int | None = None,
    video: Path | None = None,
    fps: float = 30.0,
) -> MatchResult:
    """Play ``games`` games of ``source``'s policy against ``opponent`` (see the module
    docstring)."""
    from omegaconf import OmegaConf

    from neuroplug.config.schema import EnvConfig, SelfPlayConfig
    from neuroplug.config.typed import to_dataclass
    from neuroplug.deploy.loading import read_policy
    from neuroplug.envs.make import make_spec
    from neuroplug.rl.self_play.seats import learner_agent_indices

    config = OmegaConf.create(read_policy(source).config)
    env = make_spec(to_dataclass(EnvConfig, config.env, "env"))
    if not env.agents:
        raise MatchError(f"{env.task_id} has one agent: a match needs a multi-agent env")
    selfplay = to_dataclass(SelfPlayConfig, config.get("selfplay", {}), "selfplay")
    team = learner_agent_indices(env.agents, selfplay.learner_agents)
    first, second = Player(str(source), env), Player(str(opponent), env)
    writer = None
    if video is not None:
        from neuroplug.tools.video import VideoWriter, check_output

        writer = VideoWriter(check_output(Path(video)), fps)
    maker, agents = env.maker, env.agents
    rng = np.random.default_rng(seed)
    result = MatchResult(games, 0, 0, 0, math.nan, (math.nan, math.nan))
    for start in range(0, games, WORLDS):
        batch = list(range(start, min(games, start + WORLDS)))
        recorder = writer if start == 0 else None
        result.scores += _play(
            batch, first, second, maker, agents, team, seed, max_steps, rng, recorder
        )
    if writer is not None:
        writer.close()
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


def _play(batch, first, second, maker, agents, team, seed, max_steps, rng, recorder=None):
    """Games ``batch`` side by side; each game's (first's, second's) mean agent score;
    ``recorder`` (a video writer) gets the first game's frames."""
    k = len(agents)
    worlds = [
        maker.make(**({"render_mode": "rgb_array"} if recorder and w == 0 else {}))
        for w in range(len(batch))
    ]
    seen = [world.reset(seed=seed + game)[0] for world, game in zip(worlds, batch, strict=True)]
    mine = [team or [game % k] for game in batch]
    totals = np.zeros((len(batch), k))
    alive = np.ones(len(batch), dtype=bool)
    states = {0: None, 1: None}
    steps = 0
    if recorder is not None:
        recorder.add(worlds[0].render())
    while alive.any() and (max_steps is None or steps < max_steps):
        rows = {0: [], 1: []}
        for w in np.flatnonzero(alive):
            for i, agent in enumerate(agents):
                rows[0 if i in mine[w] else 1].append((w, i, maker.observe(agent, seen[w][agent])))
        chosen = {}
        for side, player in ((0, first), (1, second)):
            if rows[side]:
                observations = np.stack([row[2] for row in rows[side]])
                # A recurrent player's states follow its rows, whose order is fixed per game.
                actions, states[side] = player.act(observations, states[side], rng)
                for (w, i, _), action in zip(rows[side], actions, strict=True):
                    chosen[(w, i)] = action
        for w in np.flatnonzero(alive):
            step = {agent: _native(chosen[(w, i)]) for i, agent in enumerate(agents)}
            seen[w], rewards, ended, cut, _ = worlds[w].step(step)
            totals[w] += [rewards.get(agent, 0.0) for agent in agents]
            if recorder is not None and w == 0:
                recorder.add(worlds[0].render())
            if all(ended.get(a) or cut.get(a) for a in agents) or not worlds[w].agents:
                alive[w] = False
                states = {0: None, 1: None}  # the rows change: start the states again
        steps += 1
    for world in worlds:
        world.close()
    scores = []
    for w in range(len(batch)):
        ours = np.zeros(k, dtype=bool)
        ours[mine[w]] = True
        scores.append((float(totals[w][ours].mean()), float(totals[w][~ours].mean())))
    return scores


def _native(action):
    action = np.asarray(action)
    return int(action) if action.dtype.kind in "iu" else action.astype(np.float32)


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.match``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.match", description=__doc__.splitlines()[0]
    )
    parser.add_argument("source", help="a run's output dir, a policy file or a shared folder")
    parser.add_argument(
        "--opponent",
        required=True,
        help="another such source, random, or package.module:function (a scripted bot)",
    )
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="game seeds' root")
    parser.add_argument("--max-steps", type=int, default=None, help="cap on steps per game")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    parser.add_argument("--video", type=Path, default=None, help="the first game, .gif or .mp4")
    arguments = parser.parse_args(argv)
    try:
        result = match(
            arguments.source, arguments.opponent, arguments.games, arguments.seed,
            arguments.max_steps, arguments.video,
        )  # fmt: skip
    except NeuroplugError as error:
        print(f"neuroplug.tools.match: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    low, high = result.interval
    print(
        f"{arguments.source} against {arguments.opponent}: {result.games} games, "
        f"{result.wins} won, {result.draws} drawn, {result.losses} lost; score rate "
        f"{result.score_rate:.3f} [{low:.3f}, {high:.3f}] (95%, Wilson)"
    )
    if arguments.video is not None:
        print(f"the first game: {arguments.video}")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(asdict(result), indent=1) + "\n")


if __name__ == "__main__":
    main()
