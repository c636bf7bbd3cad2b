"""Which agents of a world a player takes, and who won a game: shared by the learners'
self-play (:mod:`neuroplug.rl.self_play`), coevolution (:mod:`neuroplug.evolution.
coevolution`) and matches (:mod:`neuroplug.opponents.matches`)."""

from __future__ import annotations

import numpy as np

from neuroplug.envs.multi_agent.maker import role_of
from neuroplug.errors import ConfigError


def learner_agent_indices(agents: tuple[str, ...], named: list[str]) -> list[int]:
    """The agents ``selfplay.learner_agents`` names (by name or role), as lane offsets in a
    world; refused in one line where a name matches none, or every agent."""
    chosen = []
    for name in named:
        matches = [i for i, agent in enumerate(agents) if name in (agent, role_of(agent))]
        if not matches:
            raise ConfigError(
                "selfplay.learner_agents",
                f"{name!r} is no agent or role of this env",
                ", ".join(dict.fromkeys([*agents, *(role_of(agent) for agent in agents)])),
            )
        chosen.extend(matches)
    chosen = sorted(set(chosen))
    if named and len(chosen) == len(agents):
        raise ConfigError(
            "selfplay.learner_agents",
            f"{named} covers every agent, leaving the opponent none",
            "some of the agents (a team), or [] for a symmetric game",
        )
    return chosen


def game_outcome(mine: np.ndarray, theirs: np.ndarray) -> str:
    """A game's outcome for the player of the agents scoring ``mine``: its agents' mean
    score against the opponent agents' (higher: a win, equal: a draw)."""
    mean, other = float(np.mean(mine)), float(np.mean(theirs))
    return "win" if mean > other else ("draw" if mean == other else "loss")
