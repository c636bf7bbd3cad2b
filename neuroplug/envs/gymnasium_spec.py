"""Describe a gymnasium env as an :class:`EnvSpec`, checking everything before training.

``env=gymnasium env.id=LunarLander-v3`` (a registered id, with ``env.kwargs``) or
``env.entry_point=my_pkg.envs:MyEnv`` (a class of the user's own) builds one env here,
reads its spaces, steps it a little (how long a step takes decides where the pools' envs
run, see :data:`PROCESS_STEP_SECONDS`) and closes it. Whatever cannot work fails here, in
one line naming the field: an unknown id, an entry point that does not import, a kwarg the
constructor does not take, spaces no network or learner here can use.
"""

from __future__ import annotations

import importlib
import inspect
import os
import time
from dataclasses import replace
from typing import Any

import numpy as np

from neuroplug.config.schema import EnvConfig, wrapper_entry
from neuroplug.config.targets import load_target
from neuroplug.envs.families import gymnasium_family
from neuroplug.envs.gymnasium_env import (
    ARRAY,
    DICT,
    FLATTEN,
    IMAGE_HWC,
    MEASURED,
    ONE_HOT,
    EnvMaker,
    load_entry_point,
)
from neuroplug.envs.measurements import measurement_layout
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError

PROCESS_BATCH_SECONDS = 1.5e-3
"""``vectorization: auto`` steps a pool's envs in worker processes when one batch of them
(the pool's envs times one step's cost, timed when the spec is made) takes longer than
this, and there is more than one core; smaller batches step here. It is the break-even
``benchmarks/gymnasium_envs.py`` measured on the 2-core CI-class CPU, where a batch must
outweigh a worker's round trip (``benchmarks/results/gymnasium_envs.md``)."""

PROBE_SECONDS = 0.1
PROBE_STEPS = 200
"""The timing probe steps one env at most this long and this many steps."""

_RESERVED = {"max_episode_steps": "env.max_episode_steps", "render_mode": "(set for videos)"}


def make_gymnasium_spec(config: EnvConfig) -> EnvSpec:
    """The spec of ``config``'s gymnasium env (builds and steps one env, then closes it)."""
    field = "env.id" if config.id else "env.entry_point"
    try:
        import gymnasium
    except ImportError as error:
        raise ConfigError(
            field, f"gymnasium is not installed ({error})", "pip install gymnasium"
        ) from None
    env_id, imports = _id_and_imports(config)
    creator = _creator(gymnasium, config, env_id, field)
    _check_kwargs(config, creator)
    maker = EnvMaker(
        id=env_id,
        entry_point=config.entry_point,
        kwargs=dict(config.kwargs),
        max_episode_steps=config.max_episode_steps,
        imports=imports,
        wrappers=_wrappers(config),
    )
    name = maker.name
    try:
        env = maker.make()
    except ConfigError:  # the env's own refusal already names its field (a text task's)
        raise
    except Exception as error:
        what = "env.wrappers" if config.wrappers else "env.kwargs" if config.kwargs else field
        raise ConfigError(
            what,
            f"{name} could not be built: {type(error).__name__}: {_first_line(error)}",
            "an env gymnasium.make can build with these kwargs, and wrappers that take it"
            if config.wrappers
            else "an env gymnasium.make can build with these kwargs",
        ) from error
    # What the observations and actions are is the wrapped env's doing, where it is wrapped.
    shaped_by = "env.wrappers" if config.wrappers else field
    try:
        observation = _observation_shaping(name, env.observation_space, shaped_by)
        actions = _action_space(name, env.action_space, shaped_by)
        maker = replace(maker, **observation["maker"], **actions["maker"])
        step_seconds, reset_keys, info_keys = _probe(env, maker)
        registered = getattr(env, "spec", None)
        max_steps = (
            config.max_episode_steps
            or getattr(registered, "max_episode_steps", None)
            or _own_step_cap(env)
        )
        threshold = getattr(registered, "reward_threshold", None)
    finally:
        env.close()
    if max_steps is None:
        raise ConfigError(
            "env.max_episode_steps",
            f"{name} registers no episode cap, and every episode here must end",
            "an integer: the most steps an episode may take",
        )
    maker = replace(maker, info_keys=info_keys)
    family = gymnasium_family(config.family, name)
    _check_score_key(family, name, reset_keys, info_keys)
    return EnvSpec(
        task_id=name,
        family=family,
        obs_shape=observation["shape"],
        obs_dtype=np.dtype(maker.observation_dtype),
        obs_parts=observation["parts"],
        obs_categorical=observation["maker"].get("categorical", ()),
        obs_bounds=observation.get("bounds"),
        measurement_layout=observation["maker"].get("measurements"),
        discrete=actions["discrete"],
        num_actions=actions["num_actions"],
        action_low=actions["low"],
        action_high=actions["high"],
        frame_skip=family.frame_skip({}),
        max_episode_steps=int(max_steps),
        solved_return=(
            config.solved_return
            if config.solved_return is not None
            else (float(threshold) if threshold is not None and np.isfinite(threshold) else None)
        ),
        make_kwargs=dict(config.kwargs),
        maker=maker,
        workers=configured_workers(config),
        vectorization=config.vectorization,
        step_seconds=step_seconds,
    )


def _id_and_imports(config: EnvConfig) -> tuple[str | None, tuple[str, ...]]:
    """The gymnasium id without a module prefix, and the modules to import first
    (``env.imports``, then the prefix of ``module:Id``, as ``gymnasium.make`` reads it), each
    imported here: one that does not import is refused naming the setting that named it."""
    env_id, imports = config.id, list(config.imports)
    fields = [f"env.imports[{index}]" for index in range(len(imports))]
    if env_id and ":" in env_id:
        module, _, env_id = env_id.partition(":")
        if not module or not env_id:
            raise ConfigError("env.id", f"got {config.id!r}", "Id, or module:Id")
        imports.append(module)
        fields.append("env.id")
    for module, field in zip(imports, fields, strict=True):
        try:
            importlib.import_module(module)
        except Exception as error:
            raise ConfigError(
                field,
                f"module {module!r} does not import: {type(error).__name__}: {_first_line(error)}",
                "an importable module that registers the env (is its package installed?)",
            ) from None
    return env_id, tuple(dict.fromkeys(imports))


def _wrappers(config: EnvConfig) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """``env.wrappers`` as :attr:`EnvMaker.wrappers`, each class found (or the entry named)."""
    found = []
    for index, wrapper in enumerate(config.wrappers):
        field = f"env.wrappers[{index}]"
        entry, kwargs = wrapper_entry(wrapper, field)
        load_target(entry, field)  # fails here, naming the entry, not in a worker
        found.append((entry, tuple(sorted(kwargs.items()))))
    return tuple(found)


def _check_score_key(
    family: Any, name: str, reset_keys: tuple[str, ...], step_keys: tuple[str, ...]
) -> None:
    """A family that reads the true score from ``info`` needs it after every reset and step."""
    key = family.score_info_key
    if key is None:
        return
    for where, keys in (("reset()", reset_keys), ("step()", step_keys)):
        if key not in keys:
            raise ConfigError(
                "env.family",
                f"the {family.name} family reads each step's true score from info[{key!r}] "
                f"(its score_info_key), and {name}'s {where} info has no {key!r} "
                f"(its numeric entries: {', '.join(keys) or 'none'})",
                "a family whose score_info_key the env's reset() and step() info both hold, "
                "or env.family=gymnasium (the reward is the score)",
            )


def _creator(gymnasium: Any, config: EnvConfig, env_id: str | None, field: str) -> Any:
    """The env's class or factory, or a ConfigError naming ``field``."""
    if config.entry_point:
        return load_target(config.entry_point, field)
    try:
        registered = gymnasium.spec(env_id)
    except gymnasium.error.Error as error:
        raise ConfigError(
            field,
            _first_line(error),
            "a registered gymnasium id (python -c 'import gymnasium; gymnasium.pprint_registry()'); "
            "an env its package registers when imported: module:Id, or env.imports=[module]",
        ) from None
    entry = registered.entry_point
    if isinstance(entry, str):
        try:
            return load_entry_point(entry)
        except Exception:
            return None  # building it will say what is missing
    return entry


def _check_kwargs(config: EnvConfig, creator: Any) -> None:
    for key, where in _RESERVED.items():
        if key in config.kwargs:
            raise ConfigError(f"env.kwargs.{key}", "is set by neuroplug", f"use {where}")
    if creator is None or not config.kwargs:
        return
    try:
        parameters = inspect.signature(creator).parameters
    except (TypeError, ValueError):
        return
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters.values()):
        return
    accepted = [
        name
        for name, parameter in parameters.items()
        if parameter.kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and name not in ("self", "render_mode")
    ]
    for key in config.kwargs:
        if key not in accepted:
            name = getattr(creator, "__qualname__", str(creator))
            raise ConfigError(
                f"env.kwargs.{key}",
                f"is not a parameter of {name}",
                ", ".join(accepted) or "no kwargs at all",
            )


def _observation_shaping(name: str, space: Any, field: str) -> dict:
    """How ``space``'s observations become a network's input (see :mod:`gymnasium_env`);
    a space that cannot be used is refused naming ``field``, the setting that chose it."""
    from gymnasium import spaces

    def refuse(problem: str) -> ConfigError:
        return ConfigError(
            field,
            f"{name}'s observation space is {problem}",
            "Box, Discrete (one-hot), a Dict of numeric Boxes and Discretes (flattened, "
            "one-hot), or a Dict of one image and bounded numeric Boxes; a wrapper in "
            "env.wrappers can make one (minigrid.wrappers:ImgObsWrapper)",
        )

    if isinstance(space, spaces.Discrete):
        size = int(space.n)
        return {
            "maker": {"observation": ONE_HOT, "observation_size": size},
            "shape": (size,),
            "parts": (),
        }
    layout = measurement_layout(name, space, field)
    if layout is not None:  # frames with numbers beside them: packed below the pixels
        return {
            "maker": {
                "observation": MEASURED,
                "observation_dtype": "uint8",
                "measurements": layout,
            },
            "shape": layout.shape,
            "parts": (),
        }
    if isinstance(space, spaces.Dict):
        parts, categorical = [], []
        for key, entry in space.spaces.items():
            if isinstance(entry, spaces.Discrete) and int(entry.start) == 0:
                parts.append((str(key), (int(entry.n),)))
                categorical.append(str(key))
                continue
            if not isinstance(entry, spaces.Box) or len(entry.shape) >= 3:
                raise refuse(f"a Dict whose entry {key!r} is {entry}")
            parts.append((str(key), tuple(int(size) for size in entry.shape)))
        size = sum(int(np.prod(shape)) for _, shape in parts)
        return {
            "maker": {
                "observation": DICT,
                "parts": tuple(parts),
                "categorical": tuple(categorical),
            },
            "shape": (size,),
            "parts": tuple(parts),
        }
    if not isinstance(space, spaces.Box) or not np.issubdtype(space.dtype, np.number):
        raise refuse(f"{space}")
    shape = tuple(int(size) for size in space.shape)
    image = len(shape) == 3 and space.dtype == np.uint8
    if image and shape[-1] <= 4 < shape[0]:
        return {
            "maker": {"observation": IMAGE_HWC, "observation_dtype": "uint8"},
            "shape": (shape[2], shape[0], shape[1]),
            "parts": (),
        }
    if image:
        return {
            "maker": {"observation": ARRAY, "observation_dtype": "uint8"},
            "shape": shape,
            "parts": (),
        }
    if len(shape) != 1:
        size = int(np.prod(shape))
        return {"maker": {"observation": FLATTEN}, "shape": (size,), "parts": ()}
    bounds = EnvSpec.finite_bounds(space)
    return {"maker": {"observation": ARRAY}, "shape": shape, "parts": (), "bounds": bounds}


def _action_space(name: str, space: Any, field: str) -> dict:
    """Discrete or bounded Box actions; anything else refused naming the space and
    ``field``, the setting that chose it."""
    from gymnasium import spaces

    allowed = "Discrete(n) (start 0) or a bounded Box: the action spaces neuroplug's policies and learners act in"
    if isinstance(space, spaces.Discrete):
        if int(space.start) != 0:
            raise ConfigError(
                field, f"{name}'s actions are {space}, starting at {space.start}", allowed
            )
        return {
            "maker": {"discrete_actions": True, "action_dtype": "int64"},
            "discrete": True,
            "num_actions": int(space.n),
            "low": None,
            "high": None,
        }
    if isinstance(space, spaces.Box):
        low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise ConfigError(
                field,
                f"{name}'s actions are {space}, unbounded: a policy cannot scale into it",
                "bounded Box actions (wrap the env in gymnasium.wrappers.ClipAction)",
            )
        return {
            "maker": {"discrete_actions": False, "action_dtype": str(np.dtype(space.dtype))},
            "discrete": False,
            "num_actions": int(np.prod(space.shape)),
            "low": low.reshape(-1),
            "high": high.reshape(-1),
        }
    raise ConfigError(field, f"{name}'s actions are {space}", allowed)


def _probe(env: Any, maker: EnvMaker) -> tuple[float, tuple[str, ...], tuple[str, ...]]:
    """Seconds one step takes (random actions, at most :data:`PROBE_SECONDS`), and the
    numeric scalar entries of the first ``reset()``'s ``info`` and of a step's."""
    env.action_space.seed(0)
    _, info = env.reset(seed=0)
    reset_keys = _numeric_keys(info)
    steps = 0
    started = time.perf_counter()
    while steps < PROBE_STEPS and time.perf_counter() - started < PROBE_SECONDS:
        observation, _, terminated, truncated, info = env.step(env.action_space.sample())
        maker.shape(observation)  # fails here, not in a pool, if the env breaks its space
        steps += 1
        if terminated or truncated:
            env.reset()
    seconds = (time.perf_counter() - started) / max(steps, 1)
    return seconds, reset_keys, _numeric_keys(info)


def _own_step_cap(env: Any) -> int | None:
    """The cap an env applies itself without registering one: MiniGrid's ``max_steps``
    (it truncates its episodes there)."""
    cap = getattr(getattr(env, "unwrapped", env), "max_steps", None)
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None


def _numeric_keys(info: dict) -> tuple[str, ...]:
    return tuple(
        sorted(
            key
            for key, value in info.items()
            if isinstance(key, str) and np.ndim(value) == 0 and _is_number(value)
        )
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, bool, np.bool_))


def configured_workers(config: EnvConfig) -> int:
    """Worker processes a pool may use (0: none); ``auto`` decides per pool (:func:`pool_workers`)."""
    if config.vectorization == "in_process":
        return 0
    if config.vectorization == "auto" and _cores() < 2:
        return 0  # one core: a worker process could only take turns with this one
    return config.workers or _cores()


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def where_pools_step(spec: EnvSpec, envs: str, env: str) -> str:
    """For the start-up line: where ``spec``'s pools step their ``envs`` (``env.vectorization``),
    ``env`` naming one."""
    if spec.vectorization == "in_process" or not spec.workers:
        return f"{envs} step in this process"
    where = f"{envs} step in {spec.workers} worker processes"
    if spec.vectorization != "auto":
        return where
    return (
        f"{where} where a pool's step takes over {PROCESS_BATCH_SECONDS * 1e3:g} ms, else "
        f"here (auto: one {env}'s step {spec.step_seconds * 1e6:.0f} us)"
    )


def pool_workers(spec: EnvSpec, envs: int) -> int:
    """Worker processes for a pool of ``envs`` of ``spec``'s env (multi-agent: worlds): the
    spec's, unless ``auto`` finds a batch too cheap to be worth a round trip
    (:data:`PROCESS_BATCH_SECONDS`)."""
    if spec.vectorization == "in_process":
        return 0
    if spec.vectorization == "auto" and envs * spec.step_seconds < PROCESS_BATCH_SECONDS:
        return 0
    return spec.workers


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
