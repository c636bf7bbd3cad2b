"""Feet-contact rates of gymnasium's MuJoCo walkers, the descriptor QD papers use.

QDax's Brax walkers and PGA-ME (Nilsson & Cully 2021) describe a gait by the share of an
episode's steps each foot spends on the ground: Walker2d's and HalfCheetah's two feet,
Hopper's one, Ant's four. EnvPool's MuJoCo reports no contacts, so the descriptor comes
from gymnasium's MuJoCo envs, wrapped::

    python -m neuroplug algo=map_elites env=gymnasium env.id=Walker2d-v5 \\
        'env.wrappers=[neuroplug.envs.feet_contact:FeetContactRates]' algo.behavior=feet_contact

Every step the wrapper counts, per foot, whether any of MuJoCo's active contacts joins
that foot's geom to the floor, and reports the running rate as
``info["foot_contact_<k>"]`` (feet in the order of :data:`FEET`); the episode's final step
carries the whole episode's rates, which is what ``algo.behavior=feet_contact`` reads.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

FEET: dict[str, tuple[str, ...]] = {
    "Walker2d": ("foot_geom", "foot_left_geom"),
    "HalfCheetah": ("bfoot", "ffoot"),
    "Hopper": ("foot_geom",),
    "Ant": ("left_ankle_geom", "right_ankle_geom", "third_ankle_geom", "fourth_ankle_geom"),
}
"""Each walker's foot geoms (gymnasium v5 models), by the env id's or class's prefix."""
FLOOR = "floor"
INFO_PREFIX = "foot_contact_"


class FeetContactRates(gymnasium.Wrapper):
    """Adds ``info["foot_contact_<k>"]``: the share of this episode's steps foot ``k`` has
    touched the floor. ``feet``: geom names for a model not in :data:`FEET`."""

    def __init__(self, env: gymnasium.Env, feet: list[str] | None = None) -> None:
        super().__init__(env)
        model = getattr(env.unwrapped, "model", None)
        if model is None:
            raise ValueError(f"FeetContactRates needs a MuJoCo env; {env} has no .model")
        names = tuple(feet) if feet else _feet_of(env)
        self.feet = np.array([_geom_id(model, name) for name in names])
        self.floor = _geom_id(model, FLOOR)
        self.touches = np.zeros(len(self.feet))
        self.steps = 0

    def reset(self, **kwargs: Any):
        observation, info = self.env.reset(**kwargs)
        self.touches[:] = 0.0
        self.steps = 0
        return observation, self._with_rates(info)

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.touches += self._touching()
        self.steps += 1
        return observation, reward, terminated, truncated, self._with_rates(info)

    def _touching(self) -> np.ndarray:
        """Per foot, whether one of the active contacts pairs it with the floor."""
        data = self.env.unwrapped.data
        pairs = np.asarray(data.contact.geom[: data.ncon]).reshape(-1, 2)
        on_floor = np.concatenate(
            (pairs[pairs[:, 0] == self.floor, 1], pairs[pairs[:, 1] == self.floor, 0])
        )
        return np.isin(self.feet, on_floor).astype(np.float64)

    def _with_rates(self, info: dict) -> dict:
        rates = self.touches / max(self.steps, 1)
        return {**info, **{f"{INFO_PREFIX}{k}": float(rate) for k, rate in enumerate(rates)}}


def _feet_of(env: gymnasium.Env) -> tuple[str, ...]:
    """The feet of a walker in :data:`FEET`, found by its id or its class's name."""
    spec = getattr(env, "spec", None)
    names = [getattr(spec, "id", None) or "", type(env.unwrapped).__name__]
    for name in names:
        for walker, feet in FEET.items():
            if name.startswith(walker):
                return feet
    raise ValueError(
        f"FeetContactRates knows the feet of {', '.join(FEET)}; for {names[-1]} pass "
        "feet=[<geom names>]: env.wrappers=[{entry_point: "
        "neuroplug.envs.feet_contact:FeetContactRates, kwargs: {feet: [...]}}]"
    )


def _geom_id(model: Any, name: str) -> int:
    import mujoco

    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
    if index < 0:
        raise ValueError(f"the MuJoCo model has no geom {name!r}")
    return int(index)
