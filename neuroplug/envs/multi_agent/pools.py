"""PettingZoo's parallel envs as a pool kind (:class:`PettingZooPools`): the env
``env.parallel_env`` names, described by :func:`make_parallel_spec` without training
anything (one world is built to read its agents' spaces) and stepped by
:class:`~neuroplug.envs.multi_agent.lanes.AgentLanesPool`, an agent a slot."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.gymnasium_spec import (
    PROBE_SECONDS,
    PROBE_STEPS,
    configured_workers,
    where_pools_step,
)
from neuroplug.envs.measurements import MeasurementLayout, measurement_layout
from neuroplug.envs.multi_agent.maker import ParallelMaker, role_of
from neuroplug.envs.pool_kind import PoolKind
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError


class PettingZooPools(PoolKind):
    """Multi-agent worlds; a spec's ``maker`` is its :class:`ParallelMaker`."""

    name = "pettingzoo"

    def serves(self, config: EnvConfig) -> bool:
        return bool(config.parallel_env)

    def make_spec(self, config: EnvConfig) -> EnvSpec:
        return make_parallel_spec(config, self)

    def make_pool(
        self, spec: EnvSpec, seeds: np.ndarray, num_threads: int, overrides: dict[str, Any]
    ) -> Any:
        from neuroplug.envs.gymnasium_pool import GymnasiumPool
        from neuroplug.envs.gymnasium_spec import pool_workers

        settings = dict(overrides)
        # A learner's Atari settings do not apply; watch's step cap does.
        for unused in ("reward_clip", "episodic_life"):
            settings.pop(unused, None)
        cap = settings.pop("max_episode_steps", spec.maker.max_episode_steps)
        # The spec's make settings, as a video's spec carries them (its render mode).
        maker = replace(spec.maker, kwargs={**spec.make_kwargs, **settings}, max_episode_steps=cap)
        workers = pool_workers(spec, len(seeds) // spec.lanes_per_env)
        return GymnasiumPool(maker, [int(seed) for seed in seeds], workers)

    def info_keys(self, spec: EnvSpec) -> frozenset[str]:
        return frozenset()

    def stepping(self, spec: EnvSpec) -> str:
        """How many agents a world has, and where the pools step the worlds."""
        where = where_pools_step(spec, "worlds", "world")
        return f"{len(spec.agents)} agents a world, each a lane; {where}"


def make_parallel_spec(config: EnvConfig, kind: PoolKind) -> EnvSpec:
    """Check ``config`` and describe its env as one agent's, under one shared policy: every
    agent acts in the same action space; observations are padded to the longest agent's
    (a one-hot of the agent's role after them where roles differ). Refusals name the field."""
    from neuroplug.envs.families import family_named

    maker = ParallelMaker(str(config.parallel_env), dict(config.kwargs))
    try:
        world = maker.make()
    except TypeError as error:
        raise ConfigError(
            "env.kwargs", f"{config.parallel_env} refused its settings: {error}",
            "the env's own keyword arguments",
        ) from None  # fmt: skip
    try:
        agents = tuple(getattr(world, "possible_agents", ()) or ())
        if not agents or not hasattr(world, "observation_space"):
            raise ConfigError(
                "env.parallel_env",
                f"{config.parallel_env} returned {type(world).__name__}, not a PettingZoo "
                "ParallelEnv with possible_agents",
                "package.module:function returning a PettingZoo parallel env "
                "(mpe2.simple_spread_v3:parallel_env)",
            )
        spaces = {agent: world.action_space(agent) for agent in agents}
        first = spaces[agents[0]]
        if any(space != first for space in spaces.values()):
            differing = sorted({str(space) for space in spaces.values()})
            raise ConfigError(
                "env.policy_mapping",
                f"every policy is one network of the run's shape, acting in one space, and "
                f"the agents' action spaces differ ({', '.join(differing)})",
                "an env whose agents share an action space",
            )
        name = str(config.parallel_env).partition(":")[0].rsplit(".", 1)[-1]
        observed = {agent: world.observation_space(agent) for agent in agents}
        measurements = _measurements(name, observed)
        shapes = {
            agent: (
                (*measurements.frame[1:], measurements.frame[0])
                if measurements
                else tuple(space.shape)
            )
            for agent, space in observed.items()
        }
        sizes = {agent: int(np.prod(shape)) for agent, shape in shapes.items()}
        roles = tuple(dict.fromkeys(role_of(agent) for agent in agents))
        frames = ()
        if any(len(shape) == 3 for shape in shapes.values()):  # (height, width, channels)
            if len(set(shapes.values())) > 1:
                raise ConfigError(
                    "env.policy_mapping",
                    f"every policy is one network of the run's shape, and the agents' frames "
                    f"differ "
                    f"({', '.join(sorted({str(shape) for shape in shapes.values()}))})",
                    "an env whose agents see frames of one shape",
                )
            frames = shapes[agents[0]]
        maker = ParallelMaker(
            maker.factory, maker.kwargs, agents, max(sizes.values()), frames, roles,
            config.max_episode_steps, measurements,
        )  # fmt: skip
        discrete = hasattr(first, "n")
        limit = config.max_episode_steps or int(getattr(world.unwrapped, "max_cycles", 0) or 0)
        # A game may say how many frames a step is and which learner preset suits it.
        frame_skip = getattr(world.unwrapped, "frame_skip", 1)
        frame_skip = frame_skip if isinstance(frame_skip, int) and frame_skip >= 1 else 1
        preset_kind = getattr(world.unwrapped, "preset_kind", None)
        # A world whose engines run apart (ViZDoom's multiplayer games) already steps
        # beside the others: no worker processes for it, and no probe of its step's cost.
        apart = hasattr(world, "step_async")
        step_seconds = 0.0 if apart else _step_seconds(world, spaces)
    finally:
        getattr(world, "close", lambda: None)()
    return EnvSpec(
        task_id=name,
        family=family_named("multi_agent"),
        obs_shape=maker.shape,
        obs_dtype=maker.dtype,
        discrete=discrete,
        num_actions=int(first.n) if discrete else int(np.prod(first.shape)),
        action_low=None if discrete else np.asarray(first.low, np.float32).reshape(-1),
        action_high=None if discrete else np.asarray(first.high, np.float32).reshape(-1),
        frame_skip=frame_skip,
        preset_kind=preset_kind if isinstance(preset_kind, str) else None,
        max_episode_steps=limit or 100_000,
        solved_return=config.solved_return,
        make_kwargs=dict(config.kwargs),
        pool_kind=kind,
        maker=maker,
        agents=agents,
        measurement_layout=measurements,
        workers=configured_workers(config),
        vectorization="in_process" if apart else config.vectorization,
        step_seconds=step_seconds,
    )


def _step_seconds(world: Any, spaces: dict[str, Any]) -> float:
    """Seconds one step of ``world`` takes (random actions, at most
    :data:`~neuroplug.envs.gymnasium_spec.PROBE_SECONDS`): ``env.vectorization=auto``
    steps worlds in worker processes where a pool's batch of them outweighs a round trip."""
    for space in spaces.values():
        space.seed(0)
    world.reset(seed=0)
    steps = 0
    started = time.perf_counter()
    while steps < PROBE_STEPS and time.perf_counter() - started < PROBE_SECONDS:
        if not world.agents:  # the episode ended
            world.reset()
        world.step({agent: spaces[agent].sample() for agent in world.agents})
        steps += 1
    return (time.perf_counter() - started) / max(steps, 1)


def _measurements(name: str, observed: dict) -> MeasurementLayout | None:
    """The agents' packing of frames with measurements (:mod:`neuroplug.envs.measurements`)
    where they observe a ``Dict`` of an image and numbers, one packing for all; None for
    array observations. Any other ``Dict`` is refused naming the field."""
    layouts = {
        agent: measurement_layout(name, space, "env.parallel_env")
        for agent, space in observed.items()
    }
    dicts = [agent for agent, space in observed.items() if hasattr(space, "spaces")]
    if not dicts:
        return None
    first = layouts[dicts[0]]
    if first is None or len(dicts) < len(observed) or len(set(layouts.values())) > 1:
        raise ConfigError(
            "env.parallel_env",
            f"{name}'s agents observe {observed[dicts[0]]}: neuroplug reads a Dict of one image "
            "and numbers beside it, the same for every agent",
            "an env whose agents observe arrays, or one image and numeric vectors each",
        )
    return first
