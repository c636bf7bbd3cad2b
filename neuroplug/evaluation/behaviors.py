"""Behavior characterisations (BCs): a fixed-size vector describing how an episode ended.

Novelty search compares *what agents do*, not what they score. Each BC here is read from
an episode's final step: EnvPool's step that reports ``terminated``/``truncated`` still
carries the episode's last observation and info (the auto-reset happens on the next call),
so no extra simulation is needed. ``tests/evaluation/test_behaviors.py`` checks this against EnvPool.

========================  =========================================================  ======
name                      vector                                                     envs
========================  =========================================================  ======
``final_obs``             the final observation, flattened                           vector
``final_position``        the agent's final ``x`` (and ``y`` where the task has it)  MuJoCo,
                                                                                     some DMC
``final_ram``             the Atari console's 128-byte RAM at the end, as floats     Atari
``feet_contact``          each foot's share of the episode's steps on the ground      gymnasium
                          (QDax's and PGA-ME's walker descriptor), in [0, 1]          MuJoCo
``module:function``       your descriptor: ``function(observations, info)``           any
``auto``                  the env family's ``default_behavior``: ``final_obs`` (classic,
                          DeepMind Control), ``final_position`` (MuJoCo), ``final_ram``
                          (Atari), none (ViZDoom)
========================  =========================================================  ======

``final_position`` reads EnvPool's MuJoCo info: ``info["x_position"]`` on HalfCheetah,
Hopper, Walker2d (1-d BC); plus ``info["y_position"]`` on Humanoid, Ant, Swimmer (2-d, the
NS-ES paper's BC for Humanoid). DeepMind Control tasks report no position in their info;
where the observation holds the agent's global position it is read from there
(the ``dm_control`` family's ``position_entries``: the point mass's ``x, y``, the cart's ``x``, the pure-state
humanoid's root ``x, y``). The others (Cheetah, Walker, Hopper observe joints relative to
their root) are rejected, as are MuJoCo tasks without a position (Reacher,
InvertedPendulum). Which info keys a task has is read from its EnvPool spec, so
:func:`resolve` checks a name against an env before any environment starts.

``feet_contact`` reads ``info["foot_contact_<k>"]``, which
:class:`neuroplug.envs.feet_contact.FeetContactRates` adds to gymnasium's MuJoCo walkers
(``env.wrappers``): EnvPool's MuJoCo reports no contacts, so the walkers' standard QD
descriptor needs gymnasium's (``env=gymnasium env.id=Walker2d-v5``).

A descriptor of your own is an entry point, ``algo.behavior=my_pkg.qd:descriptor``: a
function of the ended episodes' final ``observations`` ``(n, *obs_shape)`` and their
``info`` (a dict of ``(n,)`` arrays: the env's numeric entries) returning ``(n, d)`` floats.
It is called once on zeros when the run is set up, which fixes ``d`` (and refuses a
function that fails, naming it). To read simulator state the observation lacks, a gymnasium
wrapper puts it into ``info`` (as ``FeetContactRates`` does).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError

BEHAVIORS = ("auto", "final_obs", "final_position", "final_ram", "feet_contact")
"""The names ``algo.behavior`` accepts (besides a ``module:function`` entry point)."""
_FOOT_PREFIX = "foot_contact_"
_POSITION_KEYS = ("x_position", "y_position")
_RAM_KEY = "ram"
_RAM_BYTES = 128  # the Atari 2600's whole RAM
_FIELD = "algo.behavior"
ALLOWED = ", ".join(BEHAVIORS) + ", or module:function (a descriptor of your own)"
"""What ``algo.behavior`` may be, for error messages."""


def is_descriptor_function(name: str) -> bool:
    """Whether ``algo.behavior`` names a ``module:function`` descriptor (torch-free check)."""
    return ":" in str(name)


def is_known(name: str) -> bool:
    """Whether ``algo.behavior`` is a name here or a ``module:function`` descriptor."""
    return name in BEHAVIORS or is_descriptor_function(name)


@dataclass(frozen=True)
class Behavior:
    """A BC resolved for one env: read ``info_keys`` (or, if none, the observation)."""

    name: str
    """The concrete BC (never ``auto``)."""
    info_keys: tuple[str, ...]
    """Info entries concatenated into the vector; empty means the observation."""
    size: int
    """Length of the vector."""
    obs_start: int = 0
    """Without info keys: the BC is the flat observation's ``size`` values from here."""
    function: str | None = None
    """A ``module:function`` descriptor, given the observations and ``info_keys``' entries
    (kept as its name: a Behavior travels to worker processes and Ray nodes)."""
    bounds: tuple[tuple[float, float], ...] | None = None
    """Each dimension's ``(low, high)``, where the descriptor fixes them (``feet_contact``:
    [0, 1]; ``final_ram``: [0, 255]; ``final_obs`` of a task whose observation space is
    finite); an archive over it then needs no ``algo.bounds``."""

    def dimension_names(self) -> tuple[str, ...]:
        """A label per dimension, for plots: ``final x_position``, ``foot_contact_0``,
        ``final obs[2]``, ``my_pkg.qd:fn[1]``."""
        if self.function is not None:
            return tuple(f"{self.function}[{k}]" for k in range(self.size))
        if len(self.info_keys) == self.size:
            final = "final " if self.name == "final_position" else ""
            return tuple(final + key for key in self.info_keys)
        if self.info_keys:  # one entry of many values: Atari's RAM
            return tuple(f"final {self.info_keys[0]}[{k}]" for k in range(self.size))
        entry = "position" if self.name == "final_position" else "obs"
        return tuple(f"final {entry}[{self.obs_start + k}]" for k in range(self.size))

    def extract(
        self, observations: np.ndarray, info: Mapping[str, np.ndarray], rows: np.ndarray
    ) -> np.ndarray:
        """``(len(rows), size)`` float64 BCs of batch rows ``rows`` of one EnvPool step."""
        if self.function is not None:
            return self._call(
                observations[rows], {key: np.asarray(info[key])[rows] for key in self.info_keys}
            )
        if not self.info_keys:
            flat = observations[rows].reshape(len(rows), -1)
            return flat[:, self.obs_start : self.obs_start + self.size].astype(np.float64)
        parts = [np.asarray(info[key])[rows].reshape(len(rows), -1) for key in self.info_keys]
        return np.concatenate(parts, axis=1).astype(np.float64)

    def _call(self, observations: np.ndarray, info: dict[str, np.ndarray]) -> np.ndarray:
        """The descriptor function's ``(n, size)`` values, or a ValueError naming it."""
        values = np.asarray(_load_descriptor(self.function)(observations, info), np.float64)
        if values.shape != (len(observations), self.size):
            raise ValueError(
                f"algo.behavior={self.function} returned shape {values.shape} for "
                f"{len(observations)} episodes; expected ({len(observations)}, {self.size})"
            )
        return values


@functools.cache
def _load_descriptor(function: str):
    from neuroplug.config.targets import load_target

    return load_target(function, _FIELD)


def _candidate(name: str, env: EnvSpec) -> Behavior | str:
    """The BC ``name`` for ``env``, or why it does not apply."""
    if name == "final_obs":
        if env.is_image:
            return f"final_obs needs vector observations; {env.task_id} observes images"
        return Behavior(name, (), int(np.prod(env.obs_shape)), bounds=env.obs_bounds)
    if name == "final_position" and env.family.position_entries:
        return _observed_position(env)
    keys = env.pool_kind.info_keys(env)
    if name == "feet_contact":
        feet = sorted(
            (
                key
                for key in keys
                if key.startswith(_FOOT_PREFIX) and key[len(_FOOT_PREFIX) :].isdigit()
            ),
            key=lambda key: int(key[len(_FOOT_PREFIX) :]),
        )
        if not feet:
            return (
                f"feet_contact needs info['{_FOOT_PREFIX}0', ...]; {env.task_id} has none (wrap "
                "a gymnasium MuJoCo walker: env.wrappers=[neuroplug.envs.feet_contact:FeetContactRates]; "
                "EnvPool's MuJoCo reports no contacts)"
            )
        return Behavior(name, tuple(feet), len(feet), bounds=((0.0, 1.0),) * len(feet))
    if name == "final_position":
        present = tuple(key for key in _POSITION_KEYS if key in keys)
        if "x_position" not in present:
            return f"final_position needs info['x_position'] (MuJoCo locomotion); {env.task_id} has none"
        return Behavior(name, present, len(present))
    if _RAM_KEY not in keys:
        return f"final_ram needs info['ram'] (Atari); {env.task_id} has none"
    return Behavior(name, (_RAM_KEY,), _RAM_BYTES, bounds=((0.0, 255.0),) * _RAM_BYTES)


def _observed_position(env: EnvSpec) -> Behavior | str:
    """The leading values of the observation entry that holds the agent's position (the
    family's ``position_entries``: DeepMind Control)."""
    entries = env.family.position_entries
    found = next(
        (where for prefix, where in entries.items() if env.task_id.startswith(prefix)), None
    )
    if found is None:
        return (
            f"final_position needs the agent's position; {env.task_id} observes none "
            f"({env.family} tasks with one: " + ", ".join(entries) + ")"
        )
    key, count = found
    start = 0
    for entry, shape in env.obs_parts:
        if entry == key:
            return Behavior("final_position", (), count, obs_start=start)
        start += int(np.prod(shape))
    return f"final_position: {env.task_id} has no observation entry {key!r}"


def resolve(name: str, env: EnvSpec) -> Behavior:
    """The BC ``name`` (``auto`` resolved by env family) for ``env``; ConfigError if it does not apply.

    Cheap and env-free, so a trainer can call it while validating a config (a
    ``module:function`` descriptor is imported and called once on zeros).
    """
    if is_descriptor_function(name):
        return _function_behavior(name, env)
    if name not in BEHAVIORS:
        raise ConfigError(_FIELD, f"unknown behavior {name!r}", ALLOWED)
    default = env.family.default_behavior
    concrete = default if name == "auto" else name
    found = (
        _candidate(concrete, env)
        if concrete is not None
        else f"no behavior characterisation is the default for {env.family} envs"
    )
    if isinstance(found, Behavior):
        return found
    fitting = [other for other in BEHAVIORS[1:] if isinstance(_candidate(other, env), Behavior)]
    if default in fitting:
        fitting.insert(0, "auto")
    own = "module:function, a descriptor of your own (docs/algorithms/quality-diversity.md)"
    allowed = ", ".join([*fitting, own]) if fitting else f"{own}: {env.task_id} has no built-in one"
    via = f"auto means {concrete} for {env.family} envs; " if name == "auto" and concrete else ""
    raise ConfigError(_FIELD, via + found, allowed)


def _function_behavior(name: str, env: EnvSpec) -> Behavior:
    """A ``module:function`` descriptor, its size found by one call on zeros (a final
    observation of the env's shape, each numeric info entry 0)."""
    from neuroplug.config.targets import load_target

    function = load_target(name, _FIELD)
    if not callable(function):
        raise ConfigError(_FIELD, f"{name} is a {type(function).__name__}, not a function", ALLOWED)
    keys = tuple(sorted(env.pool_kind.info_keys(env)))
    observations = np.zeros((1, *env.obs_shape), dtype=env.obs_dtype)
    info = {key: np.zeros(1) for key in keys}
    try:
        values = np.asarray(function(observations, info), dtype=np.float64)
    except Exception as error:
        first = (str(error).strip().splitlines() or [""])[0]
        raise ConfigError(
            _FIELD,
            f"{name}(observations, info) failed on one zero observation {observations.shape} "
            f"and info keys {list(keys)}: {type(error).__name__}: {first}",
            "a function of (observations (n, *obs_shape), info {key: (n,) array}) returning (n, d) floats",
        ) from None
    if values.ndim != 2 or values.shape[0] != 1 or values.shape[1] == 0:
        raise ConfigError(
            _FIELD,
            f"{name} returned shape {values.shape} for one episode",
            "(n, d) floats: one row of d >= 1 values per episode",
        )
    return Behavior(name, keys, int(values.size), function=name)
