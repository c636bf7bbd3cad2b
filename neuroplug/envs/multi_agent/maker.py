"""How a multi-agent env is built and what each of its agents observes, picklable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuroplug.envs.measurements import MeasurementLayout


def role_of(agent: str) -> str:
    """An agent's role: its name without the trailing index (``adversary_0`` ->
    ``adversary``), PettingZoo's naming."""
    head, _, tail = agent.rpartition("_")
    return head if head and tail.isdigit() else agent


@dataclass(frozen=True)
class ParallelMaker:
    """A PettingZoo parallel env's factory, its settings, and its agents' observation layout
    under one shared policy."""

    factory: str
    """``package.module:function`` returning the ``ParallelEnv``."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    """Every agent that may act (``possible_agents``), in order: lane ``i`` of a world is
    agent ``agents[i]``."""
    observation_size: int = 0
    """The longest agent's flat observation: each is zero-padded to it (vectors)."""
    frames: tuple[int, ...] = ()
    """Image observations: every agent's ``(height, width, channels)``, read as
    ``(channels, height, width)`` bytes (the layout neuroplug's convolutions take)."""
    roles: tuple[str, ...] = ()
    """The distinct roles (:func:`role_of`), a one-hot of which follows the observation
    where there is more than one."""
    max_episode_steps: int | None = None
    """Every agent's episode is truncated at this many steps (None: the env's own end)."""
    measurements: MeasurementLayout | None = None
    """Frames with numbers beside them (a ``Dict`` observation: Doom's health and ammo):
    packed below the pixels (:mod:`neuroplug.envs.measurements`); None: an array."""

    def make(self, **extra: Any):
        """A new env (``extra``: more constructor kwargs, e.g. ``render_mode``)."""
        from neuroplug.config.targets import load_target

        return load_target(self.factory, "env.parallel_env")(**{**self.kwargs, **extra})

    @property
    def lanes_per_env(self) -> int:
        """Slots a world takes, one per agent: a pool's worker holds whole worlds."""
        return len(self.agents)

    def slot_set(self, seeds: list[int], **extra: Any):
        """The worlds of ``seeds`` (one per :attr:`lanes_per_env` slots), stepped with
        EnvPool's rules (:class:`~neuroplug.envs.multi_agent.lanes.AgentLanes`)."""
        from neuroplug.envs.multi_agent.lanes import AgentLanes

        return AgentLanes(self, seeds, **extra)

    @property
    def width(self) -> int:
        """The shared policy's observation width (vectors)."""
        return self.observation_size + (len(self.roles) if len(self.roles) > 1 else 0)

    @property
    def shape(self) -> tuple[int, ...]:
        """What the shared policy reads: ``(width,)`` floats, or ``(channels + roles,
        height, width)`` bytes, a role's plane 255 where roles differ."""
        if not self.frames:
            return (self.width,)
        height, width, channels = self.frames
        if self.measurements is not None:
            height = self.measurements.shape[1]
        return (channels + (len(self.roles) if len(self.roles) > 1 else 0), height, width)

    @property
    def dtype(self) -> np.dtype:
        """float32 vectors, uint8 images."""
        return np.dtype(np.uint8 if self.frames else np.float32)

    def observe(self, agent: str, observation: Any) -> np.ndarray:
        """``agent``'s observation as the shared policy reads it (:attr:`shape`)."""
        if self.frames:
            seen = np.zeros(self.shape, np.uint8)
            channels = self.frames[2]
            if self.measurements is not None:
                self.measurements.pack(observation, into=seen[:channels])
            else:
                seen[:channels] = np.moveaxis(np.asarray(observation, np.uint8), -1, 0)
            if len(self.roles) > 1:
                seen[channels + self.roles.index(role_of(agent))] = 255
            return seen
        seen = np.zeros(self.width, np.float32)
        flat = np.asarray(observation, np.float32).reshape(-1)
        seen[: len(flat)] = flat
        if len(self.roles) > 1:
            seen[self.observation_size + self.roles.index(role_of(agent))] = 1.0
        return seen
