"""What the rest of neuroplug needs to know about an environment, without starting it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuroplug.envs.family import EnvFamily
from neuroplug.envs.measurements import MeasurementLayout


@dataclass(frozen=True)
class EnvSpec:
    """Observation and action spaces, frame accounting and the kwargs to build pools."""

    task_id: str
    family: EnvFamily
    """The family's traits (:mod:`neuroplug.envs.family`); ``str(family)`` is its name."""
    obs_shape: tuple[int, ...]
    """What the networks see: for a dict observation, the flat vector of its entries."""
    obs_dtype: np.dtype
    discrete: bool
    num_actions: int
    """Discrete: number of actions. Continuous: action dimension."""
    action_low: np.ndarray | None
    action_high: np.ndarray | None
    frame_skip: int
    """Emulator frames per agent step (4 on Atari; 1 where there is no such notion)."""
    max_episode_steps: int
    solved_return: float | None
    make_kwargs: dict[str, Any] = field(default_factory=dict)
    """The settings its pools are made with, besides the slots, seeds and threads."""
    start_noops: int = 0
    """Atari: the evaluation engine starts every episode with 0 to ``start_noops`` no-op
    actions, a number drawn from the episode's seed (EnvPool's ``noop_max`` setting,
    default 30, as in the DQN and deep-GA evaluations); EnvPool's own random no-ops are off
    in its pools. How an episode starts then depends on its seed alone."""
    obs_parts: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Dict observations (DeepMind Control): ``(key, shape)`` of each entry, in the order
    they are concatenated into the flat observation; empty for array observations."""
    obs_categorical: tuple[str, ...] = ()
    """Dict observations: the entries that are a category's index, one-hot encoded (their
    part's shape is ``(n,)``, the number of categories)."""
    reusable_pools: bool = False
    """Whether an episode's course depends only on its start and the actions taken (Atari
    without sticky actions): one pool may then play many evaluations (building an Atari
    env is slow). With sticky actions (EnvPool's RNG) pools are built and seeded
    per evaluation."""
    learner_settings: tuple[str, ...] = ()
    """The EnvPool training settings a learner may switch on for its own pools (Atari:
    ``reward_clip`` and ``episodic_life``); evaluations never use them."""
    pool_kind: Any = None
    """The :class:`~neuroplug.envs.pool_kind.PoolKind` that builds this env's pools."""
    maker: Any = None
    """The pool kind's own recipe for the env, where it keeps one (a gymnasium env's
    :class:`~neuroplug.envs.gymnasium_env.EnvMaker`; :attr:`make_kwargs` are its
    constructor's kwargs)."""
    workers: int = 0
    """Gymnasium envs: worker processes a pool's envs may step in (0: in this process)."""
    vectorization: str = "in_process"
    """Gymnasium envs: ``env.vectorization`` (``auto`` decides per pool by its size)."""
    step_seconds: float = 0.0
    """Gymnasium envs: one step's cost, timed when the spec was made."""
    observation_mask: tuple[int, ...] = ()
    """Entries of the task's vector observation removed before anyone sees it
    (``env.observation_mask``); :attr:`obs_shape` is what is left."""
    agents: tuple[str, ...] = ()
    """A multi-agent env's agents (:mod:`neuroplug.envs.multi_agent`): each world fills
    that many consecutive slots of a pool, one per agent; empty for a one-agent env."""
    policy_mapping: Any = "shared"
    """A multi-agent env's ``env.policy_mapping``: which policy acts for each agent
    (:func:`neuroplug.envs.multi_agent.mapping.policy_mapping` reads it)."""
    preset_kind: str | None = None
    """The task's own learner preset (``doom`` for a ViZDoom multiplayer game), where it
    has one beyond its family's :attr:`~neuroplug.envs.family.EnvFamily.preset_kind`."""
    obs_bounds: tuple[tuple[float, float], ...] | None = None
    """``(low, high)`` of each entry of a vector observation, where the task's Box declares
    a finite range for every one (Pendulum, Acrobot, MountainCar; not CartPole, whose
    velocities are unbounded): a ``final_obs`` archive then needs no ``algo.bounds``."""

    frame_stack: int = 1
    """Image observations: how many frames they stack along the channels, oldest first,
    each ``C / frame_stack`` channels, an observation sharing all but its newest frame with
    the one before (EnvPool's ``stack_num``: Atari's 4); 1 where the channels are one
    picture (colours, a role's planes). The replay buffer stores each frame once by it."""
    measurement_layout: MeasurementLayout | None = None
    """Image observations with numbers packed below the pixels (health, ammunition:
    :mod:`neuroplug.envs.measurements`), where the env gives them; :attr:`obs_shape` is
    the packed frame's."""

    @property
    def measurements(self) -> int:
        """How many numbers are packed below an image observation's pixels (0: none)."""
        return self.measurement_layout.count if self.measurement_layout else 0

    @property
    def lanes_per_env(self) -> int:
        """Slots one world fills: its agents (1 for a one-agent env)."""
        return max(1, len(self.agents))

    @property
    def is_image(self) -> bool:
        """Whether observations are stacked frames ``(C, H, W)``."""
        return len(self.obs_shape) == 3

    @staticmethod
    def finite_bounds(space: Any) -> tuple[tuple[float, float], ...] | None:
        """:attr:`obs_bounds` of a vector Box ``space`` (None: not a vector Box, or a range
        that is infinite or of no width somewhere: an archive cannot cut a constant entry's
        range into cells)."""
        low, high = getattr(space, "low", None), getattr(space, "high", None)
        if low is None or high is None or np.ndim(low) != 1:
            return None
        low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(high > low)):
            return None
        return tuple((float(a), float(b)) for a, b in zip(low, high, strict=True))

    def learner_pool_settings(self, **wanted: bool) -> dict[str, bool]:
        """``envpool.make`` settings of a learner's pools: ``wanted`` (``reward_clip=True``,
        say), for the settings this env has (:attr:`learner_settings`)."""
        return {name: value for name, value in wanted.items() if name in self.learner_settings}
