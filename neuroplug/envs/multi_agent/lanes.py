"""Multi-agent worlds whose agents are slots, stepped with EnvPool's rules.

World ``w`` of k agents holds slots ``w k .. w k + k - 1`` (agent ``i`` of
:attr:`ParallelMaker.agents` in slot ``w k + i``). :class:`AgentLanes` is to worlds what
:class:`~neuroplug.envs.gymnasium_env.SlotSet` is to gymnasium envs, and the same pool
drives both (:class:`~neuroplug.envs.gymnasium_pool.GymnasiumPool`, here or in worker
processes, whole worlds to a worker): a world is seeded once, by its first slot's seed, at
its first reset (later episodes continue its own RNG); a fresh world, or one whose episode
ended, resets on its next step (the actions ignored; the rows are its first observations,
reward 0, not done); each row is one agent's own observation, reward and episode end. A
step names every agent of each world it steps, since a world steps all its agents at once.

An agent that leaves its world before the others (PettingZoo's parallel API drops it from
``env.agents``) plays on dead until its world's episode ends, as SuperSuit's ``black_death``
wrapper plays it (the practice of CleanRL's and MAPPO's PettingZoo scripts): its row on the
step it leaves holds its last observation and reward, not yet its end; then zero
observations and rewards, its actions not sent; its episode ends with its world's, as it
ended (terminated or truncated). Its return is what it earned; its length, its world's.

Each row's score (``info["score"]``, what the curves, ratings and self-play's results
count) is the agent's own ``info["score"]`` where its env reports one (a game that pays a
shaped reward: ViZDoom's ``env.kwargs.shaping``), else its reward; 0 on a reset's rows and
a dead agent's.

A world whose env has ``step_async(actions)`` and ``step_wait()`` (and ``reset_async(seed)``,
``reset_wait()``: ViZDoom's multiplayer games, engines that are processes of their own) is
started before any is waited for, so a step's worlds step (and reset) at once, as an
EnvPool's do; any other steps in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from neuroplug.envs.gymnasium_env import StepArrays

if TYPE_CHECKING:
    from neuroplug.envs.multi_agent.maker import ParallelMaker

SCORE = "score"
"""The ``info`` entry of an agent's score, in its env's infos and in the pool's rows."""


def agent_score(infos: dict | None, agent: str, reward: float) -> float:
    """``agent``'s score in a step's ``infos`` (PettingZoo's, by agent), else ``reward``."""
    told = (infos or {}).get(agent) or {}
    return float(told.get(SCORE, reward))


class AgentLanes:
    """``len(seeds) / k`` worlds ``maker`` builds, a slot per agent (see the module
    docstring); ``extra``: more constructor kwargs (``render_mode``)."""

    def __init__(self, maker: ParallelMaker, seeds: Sequence[int], **extra) -> None:
        self.maker = maker
        self.lanes = len(maker.agents)
        if len(seeds) % self.lanes:
            raise ValueError(f"{len(seeds)} slots do not hold whole worlds of {self.lanes} agents")
        worlds = len(seeds) // self.lanes
        self.seeds = [int(seeds[world * self.lanes]) for world in range(worlds)]
        self.worlds = [maker.make(**extra) for _ in range(worlds)]
        self.started = [False] * worlds
        self.needs_reset = [True] * worlds
        self.steps = [0] * worlds
        self.gone: list[dict[str, tuple[bool, bool]]] = [{} for _ in range(worlds)]
        """Each world's agents that left before its episode ended: (terminated, truncated)."""

    def reset_all(self) -> StepArrays:
        """Reset every world: all first observations."""
        self.needs_reset = [True] * len(self.worlds)
        slots = len(self.worlds) * self.lanes
        return self.step(np.arange(slots, dtype=np.int32), np.zeros(slots, np.int64))

    def step(self, env_ids: np.ndarray, actions: np.ndarray | None) -> StepArrays:
        """Step (or reset, where due) the worlds of slots ``env_ids``, every agent of each
        named; ``actions[i]`` for slot ``env_ids[i]``."""
        env_ids = np.asarray(env_ids, np.int32)
        actions = np.zeros(len(env_ids), np.int64) if actions is None else np.asarray(actions)
        return self._step(env_ids, actions)

    def render(self, env_ids: Sequence[int]) -> np.ndarray:
        """``(n, H, W, 3)``: each slot's world as the env draws it (every agent in it)."""
        frames = {}
        for world in {int(slot) // self.lanes for slot in env_ids}:
            frames[world] = np.asarray(self.worlds[world].render())
        return np.stack([frames[int(slot) // self.lanes] for slot in env_ids])

    def close(self) -> None:
        """Close every world."""
        for world in self.worlds:
            world.close()
        self.worlds = []

    def _step(self, env_ids: np.ndarray, actions: np.ndarray) -> StepArrays:
        rows = len(env_ids)
        observations = np.zeros((rows, *self.maker.shape), self.maker.dtype)
        rewards = np.zeros(rows, np.float32)
        terminated = np.zeros(rows, bool)
        truncated = np.zeros(rows, bool)
        scores = np.zeros(rows, np.float32)
        worlds = env_ids // self.lanes
        begun: list[tuple[np.ndarray, list[str], Callable[[], dict]]] = []
        for world in dict.fromkeys(worlds.tolist()):
            mine = np.flatnonzero(worlds == world)
            agents = env_ids[mine] - world * self.lanes
            if len(mine) != self.lanes or sorted(agents.tolist()) != list(range(self.lanes)):
                raise RuntimeError(
                    f"slots {env_ids[mine].tolist()} name some agents of world {world} only: "
                    f"its {self.lanes} agents step together"
                )
            names = [self.maker.agents[agent] for agent in agents]
            if self.needs_reset[world]:
                begun.append((mine, names, self._begin_reset(world, names)))
            else:
                begun.append((mine, names, self._begin(world, names, actions[mine])))
        for mine, names, finish in begun:  # the started worlds, waited for in turn
            outcome = finish()
            for row, name in zip(mine, names, strict=True):
                seen, reward, ended, cut, score = outcome[name]
                if seen is not None:  # a dead agent's observation stays zero
                    observations[row] = self.maker.observe(name, seen)
                rewards[row], terminated[row], truncated[row] = reward, ended, cut
                scores[row] = score
        return StepArrays(env_ids, observations, rewards, terminated, truncated, {SCORE: scores})

    def _begin_reset(self, world: int, names: list[str]) -> Callable[[], dict]:
        """Start ``world``'s reset (the whole reset, for an env without ``reset_async``);
        the returned call ends it: each agent's first observation, reward 0, not done,
        score 0."""
        env = self.worlds[world]
        seed = None if self.started[world] else self.seeds[world]
        self.started[world], self.needs_reset[world] = True, False
        self.steps[world] = 0
        self.gone[world] = {}

        def first(result) -> dict:
            seen, _ = result
            return {name: (seen[name], 0.0, False, False, 0.0) for name in names}

        finish = _started(env, "reset", seed=seed)
        return lambda: first(finish())

    def _begin(self, world: int, names: list[str], actions: np.ndarray) -> Callable[[], dict]:
        """Start one step of ``world`` (the whole step, for an env without ``step_async``);
        the returned call ends it: each agent's (observation or None, reward, terminated,
        truncated, score) as its row shows them (see the module docstring)."""
        env, gone = self.worlds[world], self.gone[world]
        chosen = {
            name: _native(action)
            for name, action in zip(names, actions, strict=True)
            if name not in gone  # a dead agent's action is not sent
        }
        finish = _started(env, "step", chosen)
        return lambda: self._outcome(world, names, finish())

    def _outcome(self, world: int, names: list[str], result: tuple) -> dict:
        """What ``world``'s step ``result`` (PettingZoo's five dicts) shows each agent's row."""
        gone = self.gone[world]
        seen, rewards, ended, cut, infos = result
        self.steps[world] += 1
        limit = self.maker.max_episode_steps
        over = limit is not None and self.steps[world] >= limit
        live = [name for name in names if name not in gone]
        finished = {name: bool(ended.get(name)) or bool(cut.get(name)) or over for name in live}
        outcome = {}
        for name in live:
            reward = float(rewards.get(name, 0.0))
            outcome[name] = (
                seen.get(name),
                reward,
                bool(ended.get(name)),
                bool(cut.get(name)) or (over and not ended.get(name)),
                agent_score(infos, name, reward),
            )
        if all(finished.values()):  # the world's episode ends: every agent's with it
            self.needs_reset[world] = True
            for name, (was_ended, was_cut) in gone.items():
                outcome[name] = (None, 0.0, was_ended, was_cut, 0.0)
            return outcome
        for name in live:
            if finished[name]:  # it leaves: dead from now on, its end held for the world's
                observation, reward, was_ended, was_cut, score = outcome[name]
                gone[name] = (was_ended, was_cut)
                outcome[name] = (observation, reward, False, False, score)
        for name in names:
            if name in gone and name not in outcome:
                outcome[name] = (None, 0.0, False, False, 0.0)
        return outcome


def _started(env, call: str, *args, **kwargs) -> Callable[[], Any]:
    """Start ``env.<call>(...)``: with ``<call>_async`` where the env has it (the returned
    ``<call>_wait`` ends it), else the whole call, its result returned by the call."""
    start = getattr(env, f"{call}_async", None)
    if start is None:
        result = getattr(env, call)(*args, **kwargs)
        return lambda: result
    start(*args, **kwargs)
    return getattr(env, f"{call}_wait")


def _native(action: np.ndarray):
    """An action as PettingZoo envs take it: a Python int for a discrete space, a float32
    array for a box."""
    action = np.asarray(action)
    return (
        int(action) if action.ndim == 0 and action.dtype.kind in "iu" else action.astype(np.float32)
    )
