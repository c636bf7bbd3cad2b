"""Small PettingZoo parallel envs for the multi-agent tests (``env.parallel_env=
parallel_worlds:roles``), fast and deterministic, as a user's own would be written."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class _World(ParallelEnv):
    """A world whose episode starts with every agent in it, its clock at 0, and its
    generator reseeded when a seed is given; a subclass observes (``_observe``)."""

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        return self._observe(), {agent: {} for agent in self.agents}


class Roles(_World):
    """``guards`` guard agents (observing 3 numbers) and ``runners`` runners (2 numbers):
    each is rewarded 1 a step for the action of its role (guards 1, runners 2), 0 else;
    every episode lasts ``length`` steps. A shared policy scores only by reading its role.
    ``early``: the first runner is terminated a step before the others' episodes end (and
    leaves ``agents``, as PettingZoo's parallel API has it). ``wide``: the
    runners act in a larger action space than the guards. ``own``: each agent is rewarded
    for its own action instead (agent ``i``'s is ``i % 3``): with every agent a guard, they
    look alike, and one shared policy cannot tell them apart. ``paid_for``: every agent is
    paid 1 a step for that action instead, its role's reward its ``info["score"]`` (a
    shaped reward beside the game's score)."""

    metadata = {"name": "roles_v0", "render_modes": ["rgb_array"]}

    def __init__(
        self, guards: int = 2, runners: int = 1, length: int = 5, early: bool = False,
        wide: bool = False, own: bool = False, paid_for: int | None = None,
        render_mode: str | None = None,
    ) -> None:  # fmt: skip
        self.possible_agents = [f"guard_{i}" for i in range(guards)] + [
            f"runner_{i}" for i in range(runners)
        ]
        self.length, self.early, self.wide, self.render_mode = length, early, wide, render_mode
        self.own, self.paid_for = own, paid_for
        self.rng = np.random.default_rng()
        self.t = 0

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (3 if agent.startswith("guard") else 2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(4 if self.wide and agent.startswith("runner") else 3)

    def _observe(self):
        return {
            agent: self.rng.uniform(-1, 1, self.observation_space(agent).shape).astype(np.float32)
            for agent in self.agents
        }

    def step(self, actions):
        self.t += 1
        wanted = {agent: 1 if agent.startswith("guard") else 2 for agent in self.agents}
        if self.own:
            wanted = {agent: i % 3 for i, agent in enumerate(self.possible_agents)}
        rewards = {agent: float(actions[agent] == wanted[agent]) for agent in self.agents}
        observations = self._observe()
        over = self.t >= self.length
        truncated = {agent: over for agent in self.agents}
        terminated = {agent: False for agent in self.agents}
        if self.early and self.t == self.length - 1:
            terminated["runner_0"], truncated["runner_0"] = True, False
        infos = {agent: {} for agent in self.agents}
        if self.paid_for is not None:
            infos = {agent: {"score": rewards[agent]} for agent in self.agents}
            rewards = {agent: float(actions[agent] == self.paid_for) for agent in self.agents}
        if over:
            self.agents = []
        elif self.early and self.t == self.length - 1:
            self.agents = [agent for agent in self.agents if agent != "runner_0"]
        return observations, rewards, terminated, truncated, infos

    def render(self):
        frame = np.zeros((8, 8, 3), np.uint8)
        frame[:, : self.t] = 255
        return frame


def roles(**settings) -> Roles:
    """:class:`Roles` built with ``settings`` (what ``env.parallel_env`` names)."""
    return Roles(**settings)


def not_a_world(**settings) -> object:
    """A factory that returns something else than a parallel env (a user's mistake)."""
    return object()


CALLS: list[tuple[str, int]] = []
"""What :class:`StartedRoles` worlds were asked, in order: (the call, world id)."""


class StartedRoles(Roles):
    """:class:`Roles` whose step and reset are started and waited for apart
    (``step_async``/``step_wait``, ``reset_async``/``reset_wait``, as ViZDoom's games),
    each call noted in :data:`CALLS`."""

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self.world_id = id(self)
        self._actions = None

    def step_async(self, actions) -> None:
        CALLS.append(("start", self.world_id))
        self._actions = actions

    def step_wait(self):
        CALLS.append(("wait", self.world_id))
        return super().step(self._actions)

    def reset_async(self, seed=None, options=None) -> None:
        CALLS.append(("start reset", self.world_id))
        self._seed = seed

    def reset_wait(self):
        CALLS.append(("wait reset", self.world_id))
        return super().reset(seed=self._seed)


def started_roles(**settings) -> StartedRoles:
    """:class:`StartedRoles` built with ``settings``."""
    return StartedRoles(**settings)


class Gauges(_World):
    """``players`` agents, each seeing a screen of noise (``side`` x ``side`` bytes) and a
    gauge beside it (a ``Dict`` observation: a measurement in [0, 10]): rewarded 1 a step
    for action 1 when its gauge reads above 5, for action 0 otherwise. The screen tells
    nothing: a policy blind to the gauge scores half of what one reading it does. Episodes
    last ``length`` steps."""

    metadata = {"name": "gauges_v0", "render_modes": []}

    def __init__(self, players: int = 2, length: int = 5, side: int = 36) -> None:
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.length, self.side = length, side
        self.rng = np.random.default_rng()
        self.t = 0
        self._space = spaces.Dict(
            {
                "screen": spaces.Box(0, 255, (side, side, 1), np.uint8),
                "gauge": spaces.Box(0.0, 10.0, (1,), np.float32),
            }
        )

    def observation_space(self, agent):
        return self._space

    def action_space(self, agent):
        return spaces.Discrete(2)

    def _observe(self):
        self.gauges = self.rng.uniform(0, 10, len(self.possible_agents))
        screens = self.rng.integers(0, 256, (len(self.possible_agents), self.side, self.side, 1))
        return {
            agent: {"screen": screens[i].astype(np.uint8), "gauge": self.gauges[i : i + 1]}
            for i, agent in enumerate(self.possible_agents)
        }

    def step(self, actions):
        self.t += 1
        rewards = {
            agent: float(int(actions[agent]) == int(self.gauges[i] > 5))
            for i, agent in enumerate(self.possible_agents)
        }
        done = self.t >= self.length
        observations = self._observe()
        result = (
            observations,
            rewards,
            dict.fromkeys(self.possible_agents, False),
            dict.fromkeys(self.possible_agents, done),
            {agent: {} for agent in self.possible_agents},
        )
        if done:
            self.agents = []
        return result


def gauges(**settings) -> Gauges:
    """PettingZoo's constructor convention."""
    return Gauges(**settings)
