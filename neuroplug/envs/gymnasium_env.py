"""One gymnasium env as neuroplug sees it: how to build it, what its observations become,
and a set of seeded envs stepped with EnvPool's rules.

:class:`EnvMaker` is everything needed to build the env again in another process (an id
or an entry point, its kwargs, the episode cap, the observation's shaping); it is what a
pool and its worker processes share. :class:`SlotSet` holds a pool's envs (or a worker's
share of them) and steps them; :class:`StepArrays` is one batch of results.

Observations become what neuroplug's networks read, as the EnvPool path does:

- a ``Box`` of one dimension stays as it is; of two (or more, not an image), it is
  flattened row-major;
- a ``uint8`` image ``(H, W, C)`` with ``C <= 4`` becomes ``(C, H, W)`` (the Nature CNN's
  layout); ``(C, H, W)`` stays;
- a ``Discrete(n)`` observation (a state index) becomes a one-hot vector of ``n``;
- a ``Dict`` of numeric arrays is flattened in its keys' order
  (:mod:`neuroplug.envs.flatten`), as for DeepMind Control, a ``Discrete`` entry one-hot;
- a ``Dict`` of one image and bounded numbers (a screen and its health, say) becomes one
  frame with the numbers packed below the pixels (:mod:`neuroplug.envs.measurements`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from neuroplug.envs.measurements import MeasurementLayout

ARRAY, FLATTEN, IMAGE_HWC, ONE_HOT, DICT = "array", "flatten", "image_hwc", "one_hot", "dict"
MEASURED = "measured"


class SlotMaker(Protocol):
    """What a pool's envs are built from, here or in a worker process (picklable): a
    gymnasium env's :class:`EnvMaker`, or a multi-agent world's
    :class:`~neuroplug.envs.multi_agent.maker.ParallelMaker`."""

    lanes_per_env: int
    """Slots one env takes (a world: one per agent); a worker holds whole envs."""

    def slot_set(self, seeds: list[int], **extra: Any) -> Any:
        """Envs for ``seeds`` with :class:`SlotSet`'s calls."""


@dataclass(frozen=True)
class EnvMaker:
    """How to build one env and shape its observations (picklable: workers build from it)."""

    id: str | None
    """A registered gymnasium id (``LunarLander-v3``), or None with :attr:`entry_point`."""
    entry_point: str | None
    """``package.module:Class`` (or a function returning an env) for an unregistered env."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to the env's constructor (``render_mode`` included, for videos)."""
    max_episode_steps: int | None = None
    """Cap on steps per episode (gymnasium's ``TimeLimit``); None: the registered one."""
    observation: str = ARRAY
    """How observations are shaped (``array``, ``flatten``, ``image_hwc``, ``one_hot``,
    ``dict``, ``measured``)."""
    observation_size: int = 0
    """``one_hot``: the number of states."""
    parts: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """``dict``: the entries, in the order they are concatenated."""
    observation_dtype: str = "float32"
    """The dtype observations are delivered in."""
    discrete_actions: bool = True
    action_dtype: str = "int64"
    info_keys: tuple[str, ...] = ()
    """Numeric ``info`` entries passed on with each step (a family's true score, say)."""
    imports: tuple[str, ...] = ()
    """Modules imported before the env is made (they register envs with gymnasium): in
    every process that builds one, since a worker's registry starts empty."""
    wrappers: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    """``(module:Class, kwargs items)`` of each wrapper, applied in order."""
    categorical: tuple[str, ...] = ()
    """``dict``: the entries that are a category's index, one-hot encoded (their size is
    their part's)."""
    measurements: MeasurementLayout | None = None
    """``measured``: a ``Dict`` of one image and numbers, packed into one frame, the
    numbers below the pixels (:mod:`neuroplug.envs.measurements`)."""

    @property
    def name(self) -> str:
        """The id, or the entry point's class name."""
        return self.id or str(self.entry_point).rsplit(":", 1)[-1]

    def make(self, **extra: Any):
        """A new env (``extra``: more constructor kwargs, e.g. ``render_mode``)."""
        import gymnasium

        for module in self.imports:
            importlib.import_module(module)
        kwargs = {**self.kwargs, **extra}
        if self.id is not None:
            env = gymnasium.make(
                self.id,
                max_episode_steps=self.max_episode_steps,
                disable_env_checker=True,
                **kwargs,
            )
        else:
            spec = gymnasium.envs.registration.EnvSpec(
                id=_spec_name(self.name),
                entry_point=load_entry_point(str(self.entry_point)),
                max_episode_steps=self.max_episode_steps,
                disable_env_checker=True,
                kwargs=kwargs,
            )
            env = gymnasium.make(spec)
        for entry_point, wrapper_kwargs in self.wrappers:
            env = load_entry_point(entry_point)(env, **dict(wrapper_kwargs))
        return env

    lanes_per_env = 1
    """Slots an env takes (a multi-agent world's maker: one per agent)."""

    def slot_set(self, seeds: list[int], **extra: Any) -> SlotSet:
        """The envs of ``seeds``, stepped with EnvPool's rules (:class:`SlotSet`)."""
        return SlotSet(self, seeds, **extra)

    def shape(self, observation: Any) -> np.ndarray:
        """One raw observation as the networks read it."""
        if self.observation == ARRAY:
            return observation
        if self.observation == FLATTEN:
            return np.asarray(observation).reshape(-1)
        if self.observation == IMAGE_HWC:
            return np.asarray(observation).transpose(2, 0, 1)
        if self.observation == MEASURED:
            return self.measurements.pack(observation)
        if self.observation == ONE_HOT:
            row = np.zeros(self.observation_size, dtype=self.observation_dtype)
            row[int(observation)] = 1
            return row
        return np.concatenate(
            [
                _one_hot(observation[key], shape[0])
                if key in self.categorical
                else np.asarray(observation[key], dtype=np.float64).reshape(-1)
                for key, shape in self.parts
            ]
        )


def _one_hot(index: Any, size: int) -> np.ndarray:
    row = np.zeros(size)
    row[int(index)] = 1.0
    return row


def load_entry_point(entry_point: str):
    """The object ``package.module:attribute`` names (ImportError/AttributeError as raised)."""
    module_name, _, attribute = entry_point.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)


def _spec_name(name: str) -> str:
    # gymnasium's EnvSpec wants an id of word characters; a class name is one.
    return "".join(char if char.isalnum() or char in "_-" else "_" for char in name) or "env"


class StepArrays(NamedTuple):
    """One batch of results, a row per env stepped."""

    env_ids: np.ndarray
    observations: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    info: dict[str, np.ndarray]

    @staticmethod
    def concatenate(parts: list[StepArrays]) -> StepArrays:
        """The parts' rows one after the other (a worker's env ids already made global)."""
        if len(parts) == 1:
            return parts[0]
        keys = set.intersection(*(set(part.info) for part in parts)) if parts else set()
        return StepArrays(
            *(np.concatenate([part[index] for part in parts]) for index in range(5)),
            {key: np.concatenate([part.info[key] for part in parts]) for key in sorted(keys)},
        )


class SlotSet:
    """Envs built by ``maker``, env ``i`` seeded by ``seeds[i]`` at its first reset, stepped
    with EnvPool's rules (a fresh or ended env resets on its next step)."""

    def __init__(self, maker: EnvMaker, seeds: list[int], **extra: Any) -> None:
        self.maker = maker
        self.seeds = seeds
        self.envs = [maker.make(**extra) for _ in seeds]
        self.started = [False] * len(seeds)
        self.needs_reset = [True] * len(seeds)
        probe = maker.shape(self.envs[0].observation_space.sample()) if seeds else None
        self.obs_shape = () if probe is None else np.shape(probe)
        self.obs_dtype = np.dtype(maker.observation_dtype)
        self.action_dtype = np.dtype(maker.action_dtype)

    def reset_all(self) -> StepArrays:
        """Reset every env (the first time with its seed)."""
        for index in range(len(self.envs)):
            self.needs_reset[index] = True
        return self.step(np.arange(len(self.envs), dtype=np.int32), None)

    def step(self, env_ids: np.ndarray, actions: np.ndarray | None) -> StepArrays:
        """Step (or reset, where due) envs ``env_ids``; ``actions[i]`` for env ``env_ids[i]``."""
        count = len(env_ids)
        observations = np.empty((count, *self.obs_shape), dtype=self.obs_dtype)
        rewards = [0.0] * count
        terminated = [False] * count
        truncated = [False] * count
        infos: list[dict] = [{}] * count
        shape, envs, needs_reset = self.maker.shape, self.envs, self.needs_reset
        discrete = self.maker.discrete_actions
        for row, index in enumerate(env_ids.tolist()):
            env = envs[index]
            if needs_reset[index]:
                seed = None if self.started[index] else self.seeds[index]
                observation, info = env.reset(seed=seed)
                self.started[index] = True
                needs_reset[index] = False
            else:
                action = actions[row]
                action = int(action) if discrete else action.astype(self.action_dtype, copy=False)
                observation, reward, ended, cut, info = env.step(action)
                rewards[row] = reward
                if ended or cut:
                    terminated[row], truncated[row] = bool(ended), bool(cut)
                    needs_reset[index] = True
            observations[row] = shape(observation)
            infos[row] = info
        return StepArrays(
            env_ids.astype(np.int32, copy=False),
            observations,
            np.asarray(rewards, dtype=np.float32),
            np.asarray(terminated, dtype=bool),
            np.asarray(truncated, dtype=bool),
            self._info(infos),
        )

    def _info(self, infos: list[dict]) -> dict[str, np.ndarray]:
        found = {}
        for key in self.maker.info_keys:
            if all(key in info for info in infos):
                found[key] = np.asarray([info[key] for info in infos])
        return found

    def render(self, env_ids: np.ndarray) -> np.ndarray:
        """``(n, H, W, 3)`` frames of envs ``env_ids``."""
        return np.stack([np.asarray(self.envs[index].render()) for index in env_ids.tolist()])

    def close(self) -> None:
        """Close every env."""
        for env in self.envs:
            env.close()
        self.envs = []
