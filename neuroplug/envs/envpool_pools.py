"""EnvPool's pools (:class:`EnvPoolPools`): tasks named by ``env.task_id``, C++ envs
stepped on EnvPool's own threads, one slot per seed through EnvPool's ``env_seed``.

EnvPool has no wheel for every platform (Linux on ARM): a task is then refused in one line
that says what to use instead (a gymnasium env).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import platform
import sys
import types
import warnings
from typing import Any

import numpy as np

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.families import detect_family, family_named, family_names
from neuroplug.envs.family import EnvFamily
from neuroplug.envs.flatten import FlatObservationPool, categorical_entries, observation_parts
from neuroplug.envs.measurements import info_measurement_layout
from neuroplug.envs.pool_kind import PoolKind
from neuroplug.envs.raw_steps import RawSteps
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError

_RESERVED_KWARGS = {"num_envs", "batch_size", "seed", "env_seed", "num_threads", "env_type"}

BOOKKEEPING_INFO = ("env_id", "players.")
"""EnvPool's info entries that say which env stepped, not what it did."""


class EnvPoolPools(PoolKind):
    """EnvPool's tasks: any ``env.task_id`` EnvPool lists (the fallback kind)."""

    name = "envpool"

    def serves(self, config: EnvConfig) -> bool:
        return True

    def make_spec(self, config: EnvConfig) -> EnvSpec:
        return _envpool_spec(config, self)

    def make_pool(
        self, spec: EnvSpec, seeds: np.ndarray, num_threads: int, overrides: dict[str, Any]
    ) -> Any:
        envpool = _envpool_for(spec.task_id, spec.family)
        players = len(spec.agents) or 1
        # A multi-player task: a world per `players` slots, seeded by its first slot's seed.
        seeds = seeds[::players]
        num_envs = len(seeds)
        # Imported here: neuroplug.runtime.devices imports torch, and a spec is made (its errors found)
        # before torch is, at a run's front door.
        from neuroplug.runtime.devices import available_env_threads

        # EnvPool reads 0 as "one thread per env", far too many on a small machine.
        threads = min(available_env_threads(num_threads), num_envs)
        spec.family.prepare_pool_start()
        pool = envpool.make(
            spec.task_id,
            env_type="gymnasium",
            num_envs=num_envs,
            batch_size=num_envs,
            num_threads=threads,
            seed=int(seeds[0]),
            env_seed=[int(seed) for seed in seeds],
            **{**spec.make_kwargs, **overrides},
        )
        if players > 1:
            from neuroplug.envs.multi_agent.envpool_players import EnvPoolPlayersPool

            return EnvPoolPlayersPool(pool, players)
        if spec.measurement_layout is not None:
            from neuroplug.envs.measured_frames import MeasuredFramesPool

            return MeasuredFramesPool(pool, spec.measurement_layout)
        if not spec.obs_parts:
            return pool
        return FlatObservationPool(pool, spec.obs_parts, spec.obs_categorical)

    def step_batches(self, pool: Any, family: EnvFamily) -> Any:
        """EnvPool's state arrays read as they are (:class:`~neuroplug.envs.raw_steps.RawSteps`);
        a multi-player task's players as slots (its pool's own driver)."""
        if hasattr(pool, "players"):
            return pool.step_batches(family.score_info_key, family.game_over_info_key)
        return RawSteps(pool, family)

    def info_keys(self, spec: EnvSpec) -> frozenset[str]:
        return frozenset(
            key for key in _info_keys(spec.task_id) if not key.startswith(BOOKKEEPING_INFO)
        )


@functools.cache
def _info_keys(task_id: str) -> frozenset[str]:
    """The info entries EnvPool returns for ``task_id`` (read from its spec; starts nothing).

    They depend on the task only, and Atari specs are slow to build, hence the cache.
    """
    envpool = _envpool()
    prefix = "info:"
    keys = envpool.make_spec(task_id).state_array_spec
    return frozenset(key[len(prefix) :] for key in keys if key.startswith(prefix))


def _envpool(family: str = "auto"):
    """The ``envpool`` module, with at least ``family``'s tasks registered.

    ``import envpool`` registers every family EnvPool ships, and Jumanji's renderer pulls
    in matplotlib on the way: a good part of a CartPole run's start on a small machine.
    For a known family the first import registers just that one; :func:`_register_all`
    adds the rest when a task is not found there.
    """
    # EnvPool's gymnasium wrapper warns about float64 box bounds on every spec.
    warnings.filterwarnings("ignore", message=".*precision lowered.*")
    _require_envpool()
    known = family_named(family)
    if known is not None and not known.registration:
        known = None  # a family of gymnasium envs: EnvPool registers nothing for it
    if "envpool" not in sys.modules and known is not None:
        sys.modules["envpool.entry"] = types.ModuleType("envpool.entry")
        try:
            import envpool  # noqa: F401  (its __init__ finds the stand-in entry module)
        finally:
            # Gone again, so that importing envpool.entry later registers everything.
            del sys.modules["envpool.entry"]
        try:
            importlib.import_module(known.registration)
        except ImportError:  # an EnvPool laid out differently: register everything
            _register_all()
    import envpool

    return envpool


def _require_envpool() -> None:
    """A ConfigError in one line where EnvPool is not installed (it has no wheel for Linux
    on ARM): what to use instead."""
    if sys.modules.get("envpool") is not None:
        return
    try:  # a None in sys.modules (blocked) raises ValueError here
        found = importlib.util.find_spec("envpool") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(
            "env.task_id",
            f"EnvPool is not installed here ({platform.system()} {platform.machine()}; "
            "it publishes wheels for Linux x86_64, macOS arm64 and Windows amd64)",
            "env=gymnasium env.id=<a gymnasium id> (e.g. CartPole-v1), or build EnvPool from source",
        )


def _register_all() -> None:
    """Register every EnvPool family (a no-op for those already registered)."""
    importlib.import_module("envpool.entry")


def _envpool_for(task_id: str, family: str):
    """The ``envpool`` module with ``task_id`` registered, if EnvPool has it at all."""
    envpool = _envpool(family)
    if task_id not in envpool.list_all_envs():
        _register_all()
    return envpool


def _envpool_spec(config: EnvConfig, kind: PoolKind) -> EnvSpec:
    """The spec of an EnvPool task (starts nothing)."""
    envpool = _envpool_for(config.task_id, config.family)
    task_ids = envpool.list_all_envs()
    if config.task_id not in task_ids:
        close = difflib.get_close_matches(config.task_id, task_ids, n=5)
        hint = f"did you mean {', '.join(close)}?" if close else "see envpool.list_all_envs()"
        raise ConfigError(
            "env.task_id", f"EnvPool has no task {config.task_id!r}; {hint}", "an EnvPool task id"
        )
    bad = sorted(_RESERVED_KWARGS & set(config.kwargs))
    if bad:
        raise ConfigError(
            "env.kwargs", f"{bad} are set by neuroplug itself", "other envpool.make arguments"
        )
    if config.family != "auto" and family_named(config.family) is None:
        raise ConfigError(
            "env.family", f"got {config.family!r}", ", ".join(("auto", *family_names()))
        )
    plain = envpool.make_spec(config.task_id)
    # The task's own family (a named one only chose which EnvPool module to import first).
    family = detect_family(plain.config._asdict(), plain)
    _check_info_keys(family, config.task_id, getattr(plain, "_state_keys", None))
    known = sorted(set(plain.config._fields) - _RESERVED_KWARGS)
    unknown = sorted(set(config.kwargs) - set(known))
    if unknown:
        raise ConfigError(
            f"env.kwargs.{unknown[0]}",
            f"is not a setting of EnvPool's {config.task_id}",
            ", ".join(known),
        )
    kwargs = {**family.make_defaults(), **config.kwargs}
    if config.max_episode_steps is not None:
        kwargs["max_episode_steps"] = config.max_episode_steps
    try:
        envpool_spec = envpool.make_spec(config.task_id, **kwargs)
    except Exception as error:  # EnvPool's type errors are long C++ signatures: keep line one
        given = ", ".join(f"{key}={value!r}" for key, value in config.kwargs.items())
        raise ConfigError(
            "env.kwargs",
            f"EnvPool rejected {given} for {config.task_id}: {str(error).splitlines()[0]}",
            "values of the types EnvPool documents for these settings (numbers, booleans, strings)",
        ) from error
    settings = envpool_spec.config._asdict()
    players = int(settings.get("max_num_players", 1) or 1)
    observation_space = envpool_spec.observation_space
    action_space = envpool_spec.action_space
    obs_parts = observation_parts(config.task_id, observation_space)
    categorical = categorical_entries(observation_space)
    if obs_parts:
        obs_shape: tuple[int, ...] = (sum(int(np.prod(shape)) for _, shape in obs_parts),)
        dtypes = [entry.dtype for entry in observation_space.spaces.values()]
        obs_dtype = np.result_type(*dtypes, *([np.float32] if categorical else []))
    else:
        obs_shape = tuple(int(size) for size in observation_space.shape)
        obs_dtype = np.dtype(observation_space.dtype)
    discrete = hasattr(action_space, "n")
    stack = int(settings.get("stack_num", 1) or 1)
    image = len(obs_shape) == 3 and obs_shape[0] % stack == 0
    measurements = None
    if config.measurements:
        if players > 1:
            raise ConfigError(
                "env.measurements",
                f"{config.task_id} is a multi-player task; measurements beside its frames "
                "are read for single-player tasks",
                "a single-player EnvPool task of frames",
            )
        available = frozenset(
            key for key in _info_keys(config.task_id) if not key.startswith(BOOKKEEPING_INFO)
        )
        measurements = info_measurement_layout(
            config.task_id, obs_shape, config.measurements, available
        )
        obs_shape = measurements.shape
    return EnvSpec(
        task_id=config.task_id,
        # Measurements sit below channel 0's pixels alone: a replay that rebuilt stacks from
        # their newest frames would lose them, so such observations are kept whole.
        frame_stack=stack if image and measurements is None else 1,
        family=family,
        obs_shape=obs_shape,
        obs_dtype=obs_dtype,
        obs_parts=obs_parts,
        obs_categorical=categorical,
        obs_bounds=None if obs_parts else EnvSpec.finite_bounds(observation_space),
        discrete=discrete,
        num_actions=int(action_space.n) if discrete else int(np.prod(action_space.shape)),
        action_low=None if discrete else np.asarray(action_space.low, dtype=np.float32),
        action_high=None if discrete else np.asarray(action_space.high, dtype=np.float32),
        frame_skip=family.frame_skip(settings),
        max_episode_steps=int(settings["max_episode_steps"]),
        solved_return=(
            config.solved_return
            if config.solved_return is not None
            else _finite_or_none(settings.get("reward_threshold"))
        ),
        make_kwargs=kwargs,
        pool_kind=kind,
        start_noops=family.start_noops(settings),
        reusable_pools=family.reusable_pools(settings),
        learner_settings=tuple(
            name for name in ("reward_clip", "episodic_life") if name in settings
        ),
        # A multi-player task (IntersectionMultiAgent): its players are a world's agents.
        agents=tuple(f"player_{i}" for i in range(players)) if players > 1 else (),
        measurement_layout=measurements,
    )


def _finite_or_none(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def _check_info_keys(family: EnvFamily, task_id: str, state_keys: Any) -> None:
    """A family that reads the true score or the game's end from ``info`` needs the task to
    have those entries: refused here, naming them, rather than at the first step."""
    if state_keys is None:  # an EnvPool that does not list them: the first step will say
        return
    present = {key.removeprefix("info:") for key in state_keys if key.startswith("info:")}
    for trait in ("score_info_key", "game_over_info_key"):
        key = getattr(family, trait)
        if key is not None and key not in present:
            raise ConfigError(
                "env.family",
                f"the {family.name} family reads info[{key!r}] (its {trait}), and EnvPool's "
                f"{task_id} has no such entry (its info: {', '.join(sorted(present))})",
                f"a family whose {trait} the task's info holds",
            )
