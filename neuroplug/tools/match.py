"""Two policies against each other in a multi-agent game, with the score and a confidence
interval: ``python -m neuroplug.tools.match RUN --opponent OTHER``.

::

    python -m neuroplug.tools.match outputs/<run> --opponent random --games 200
    python -m neuroplug.tools.match outputs/<run> \\
        --opponent neuroplug.envs.multi_agent.games.pong_duel:tracking_bot
    python -m neuroplug.tools.match outputs/<run> --opponent outputs/<other run> --video m.mp4

``RUN`` is a run's output dir (or policy file, or shared folder); the opponent another such
source, ``random`` or a scripted bot (``package.module:function`` of ``(observations, rng)
-> actions``, as ``selfplay.bots``). Both act as deployed; seats, outcomes and the
interval are :mod:`neuroplug.opponents.matches`'s (the run's ``selfplay.learner_agents``
its team). Of a run with a policy per team or agent (``env.policy_mapping``), ``--policy``
names the one that plays (a policy's or an agent's name), on the agents it plays in its
run; ``--opponent-policy`` the opponent run's. ``--video`` records the first game as the
env draws it (every agent in it).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from neuroplug.errors import ConfigError, NeuroplugError
from neuroplug.opponents.matches import (
    MatchResult,
    play_match,
    wilson,
)

__all__ = ["MatchError", "MatchResult", "main", "match", "wilson"]


class MatchError(NeuroplugError):
    """A match that cannot be played (one line, what to use instead)."""


def match(
    source: str | Path,
    opponent: str,
    games: int = 100,
    seed: int = 0,
    max_steps: int | None = None,
    video: Path | None = None,
    fps: float = 30.0,
    policy: str | None = None,
    opponent_policy: str | None = None,
) -> MatchResult:
    """Play ``games`` games of ``source``'s policy against ``opponent`` (see the module
    docstring); of a run holding a policy per team or agent, ``policy`` (``opponent_policy``)
    names the one that plays, on its own agents."""
    from omegaconf import OmegaConf

    from neuroplug.config.schema import EnvConfig, SelfPlayConfig
    from neuroplug.config.typed import to_dataclass
    from neuroplug.deploy.loading import read_policy
    from neuroplug.envs.make import make_spec
    from neuroplug.opponents.seating import learner_agent_indices
    from neuroplug.training.players import player_of
    from neuroplug.training.policy_file import policy_row

    record = read_policy(source)
    config = OmegaConf.create(record.config)
    env = make_spec(to_dataclass(EnvConfig, config.env, "env"))
    if not env.agents:
        raise MatchError(f"{env.task_id} has one agent: a match needs a multi-agent env")
    selfplay = to_dataclass(SelfPlayConfig, config.get("selfplay", {}), "selfplay")
    team = learner_agent_indices(env.agents, selfplay.learner_agents)
    try:  # each refused naming the argument that gave it
        first = player_of(str(source), env, "RUN", policy)
        second = player_of(str(opponent), env, "--opponent", opponent_policy)
        if policy is not None:  # the agents that policy plays in its run
            row = policy_row(record, policy)
            team = [a for a, mine in enumerate(record.env["agent_policies"]) if mine == row]
    except ConfigError as error:
        raise MatchError(str(error)) from None
    writer = None
    if video is not None:
        from neuroplug.tools.video import VideoWriter, check_output

        writer = VideoWriter(check_output(Path(video)), fps)
    try:
        return play_match(first, second, env, team, games, seed, max_steps, writer)
    finally:
        if writer is not None:
            writer.close()


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
    parser.add_argument(
        "--policy",
        default=None,
        help="of a run with a policy per team or agent, the one that plays (its agents' seats)",
    )
    parser.add_argument(
        "--opponent-policy",
        default=None,
        help="of an opponent run with a policy per team or agent, the one that plays",
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
            arguments.max_steps, arguments.video, policy=arguments.policy,
            opponent_policy=arguments.opponent_policy,
        )  # fmt: skip
    except NeuroplugError as error:
        print(f"neuroplug.tools.match: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"{arguments.source} against {arguments.opponent}: {result.describe()}")
    if arguments.video is not None:
        print(f"the first game: {arguments.video}")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(asdict(result), indent=1) + "\n")


if __name__ == "__main__":
    main()
