"""Pong for two paddles as a PettingZoo parallel env, in numbers rather than pixels:
``neuroplug.envs.multi_agent.games.pong_duel:parallel_env`` (``env=pong_duel``).

The court is the unit square; paddle ``paddle_0`` guards x = 0, ``paddle_1`` x = 1, each
of half-height ``PADDLE_HALF`` moving up or down by ``PADDLE_SPEED`` a step (actions: 0
stay, 1 up, 2 down). The ball starts at the centre towards a random side at speed
``BALL_SPEED`` horizontally, bounces off the top and bottom walls, and off a paddle that
meets it, steeper the further from the paddle's centre it hits. A ball past a paddle is a
point: +1 to the scorer, -1 to the other, and a new serve. A game ends when a player has
``points`` points (a ``max_cycles`` step cap truncates it).

Each paddle observes the court from its own side (x mirrored for ``paddle_1``), so one
policy plays either paddle: its own height, the other's, the ball's position and velocity
(velocities scaled to about unit size). Bots for self-play: :func:`tracking_bot` (follows
the ball, slower than a player) and the pool's ``random``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

PADDLE_HALF = 0.1
PADDLE_SPEED = 0.04
BALL_SPEED = 0.03
SPIN = 0.06
"""Vertical speed a hit at the paddle's edge gives the ball."""
AGENTS = ("paddle_0", "paddle_1")
STAY, UP, DOWN = 0, 1, 2


class PongDuel(ParallelEnv):
    """Two paddles, one ball (see the module docstring)."""

    metadata = {"name": "pong_duel_v0", "render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, points: int = 3, max_cycles: int = 2000, render_mode: str | None = None):
        self.points = points
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self._rng = np.random.default_rng()
        self._obs_space = spaces.Box(-np.inf, np.inf, (6,), np.float32)
        self._act_space = spaces.Discrete(3)
        self.paddles = np.full(2, 0.5)
        self.ball = np.array([0.5, 0.5])
        self.velocity = np.array([BALL_SPEED, 0.0])
        self.score = np.zeros(2, dtype=int)
        self.steps = 0

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_space

    def reset(self, seed: int | None = None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(AGENTS)
        self.paddles[:] = 0.5
        self.score[:] = 0
        self.steps = 0
        self._serve(int(self._rng.integers(2)))
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions):
        for side, agent in enumerate(AGENTS):
            move = int(actions.get(agent, STAY))
            delta = PADDLE_SPEED if move == UP else (-PADDLE_SPEED if move == DOWN else 0.0)
            self.paddles[side] = np.clip(self.paddles[side] + delta, PADDLE_HALF, 1 - PADDLE_HALF)
        self.ball += self.velocity
        if not 0.0 <= self.ball[1] <= 1.0:  # the top or bottom wall
            self.ball[1] = -self.ball[1] if self.ball[1] < 0 else 2 - self.ball[1]
            self.velocity[1] = -self.velocity[1]
        rewards = np.zeros(2)
        for side, edge in ((0, 0.0), (1, 1.0)):
            crossed = self.ball[0] <= edge if side == 0 else self.ball[0] >= edge
            if not crossed:
                continue
            offset = (self.ball[1] - self.paddles[side]) / PADDLE_HALF
            if abs(offset) <= 1.0:  # returned
                self.ball[0] = 2 * edge - self.ball[0]
                self.velocity[0] = -self.velocity[0]
                self.velocity[1] = SPIN * offset
            else:  # a point for the other side
                rewards[1 - side], rewards[side] = 1.0, -1.0
                self.score[1 - side] += 1
                self._serve(side)
        self.steps += 1
        over = bool(self.score.max() >= self.points)
        cut = not over and self.steps >= self.max_cycles
        observations = self._observations()
        result = (
            observations,
            {agent: float(rewards[side]) for side, agent in enumerate(AGENTS)},
            dict.fromkeys(AGENTS, over),
            dict.fromkeys(AGENTS, cut),
            {agent: {} for agent in AGENTS},
        )
        if over or cut:
            self.agents = []
        return result

    def _serve(self, towards: int) -> None:
        """The ball at the centre, heading to side ``towards`` at a random slope."""
        self.ball[:] = 0.5
        slope = self._rng.uniform(-0.5, 0.5) * SPIN
        self.velocity[:] = (BALL_SPEED if towards == 1 else -BALL_SPEED, slope)

    def _observations(self) -> dict[str, np.ndarray]:
        seen = {}
        for side, agent in enumerate(AGENTS):
            x = self.ball[0] if side == 0 else 1.0 - self.ball[0]
            vx = self.velocity[0] if side == 0 else -self.velocity[0]
            seen[agent] = np.array(
                [
                    self.paddles[side], self.paddles[1 - side], x, self.ball[1],
                    vx / BALL_SPEED, self.velocity[1] / SPIN,
                ],
                dtype=np.float32,
            )  # fmt: skip
        return seen

    def render(self):
        """An RGB frame (96 x 96): paddles white, ball white, court black."""
        size = 96
        frame = np.zeros((size, size, 3), np.uint8)
        for side, column in ((0, 1), (1, size - 2)):
            low = int((1 - self.paddles[side] - PADDLE_HALF) * (size - 1))
            high = int((1 - self.paddles[side] + PADDLE_HALF) * (size - 1))
            frame[max(low, 0) : high + 1, column] = 255
        x = int(np.clip(self.ball[0], 0, 1) * (size - 1))
        y = int((1 - np.clip(self.ball[1], 0, 1)) * (size - 1))
        frame[max(y - 1, 0) : y + 2, max(x - 1, 0) : x + 2] = 255
        return frame

    def close(self) -> None:
        pass


def parallel_env(**kwargs) -> PongDuel:
    """PettingZoo's constructor convention: the parallel env."""
    return PongDuel(**kwargs)


def tracking_bot(observations: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Follows the ball's height while it comes towards its paddle, at most every other
    step (half a player's speed), and drifts back to the centre otherwise: beatable by a
    steep return."""
    own, ball_y, coming = observations[:, 0], observations[:, 3], observations[:, 4] < 0
    target = np.where(coming, ball_y, 0.5)
    move = np.where(target > own + 0.02, UP, np.where(target < own - 0.02, DOWN, STAY))
    resting = rng.random(len(observations)) < 0.5
    return np.where(resting, STAY, move).astype(np.int64)
