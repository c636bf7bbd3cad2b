"""Reward shaping for Doom's deathmatches: a player paid for what its game variables did
in a step (``env.kwargs.shaping`` of :mod:`~neuroplug.envs.multi_agent.games.doom_multiplayer`).

The schemes are Sample Factory's for its Doom agents (``sf_examples/vizdoom/doom/wrappers/
reward_shaping.py``, Petrenko et al. 2020): each variable's change in a step is paid at
one rate per unit it rose and another per unit it fell (a frag +1, a death -0.75, damage
dealt +0.003 a point, health +0.005 gained and -0.003 lost, a weapon picked up +0.02 times
its preference, its ammo +0.0002 times it ...), damage counted up to 200 a step and hits
up to 5, and a small bonus each step the player has held the same loaded weapon for
:data:`HELD_STEPS` steps. Nothing is paid on an episode's first or last step, nor on the
step a dead player is back (its health and weapons restored by the respawn, not earned);
health and armour count from 0 (:data:`FLOORS`).

- ``sample_factory``: the scheme Sample Factory trains with against Doom's bots (a
  suicide -1.5 where a frag is +1);
- ``sample_factory_zero_sum``: the one it uses between agents (a frag +1 and a death -1,
  damage and health paid more, hits not at all), so one player's gain is much of the
  other's loss.

One difference, on purpose: the held-weapon bonus here is the held weapon's preference
(0.0002 times it), as Sample Factory's table of it says; its wrapper reads the table with
the variable of the loop that built it, and so pays the last weapon's (0.002) for any.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

SHAPINGS = ("none", "sample_factory", "sample_factory_zero_sum")
"""``env.kwargs.shaping``: no shaping (the reward is the score), or a scheme below."""
WEAPONS = 8
"""Doom's weapon slots a scheme pays for (0-7)."""
WEAPON_PREFERENCE = {2: 1, 3: 5, 4: 5, 5: 5, 6: 10, 7: 10}
"""How much a weapon is worth (slot -> preference; 1 for any other): the pistol 1, the
shotguns, the chaingun and the rocket launcher 5, the plasma gun and the BFG 10."""
HELD_STEPS = 5
"""Steps a loaded weapon must have been the one selected before holding it is paid."""
CAPS = {"DAMAGECOUNT": 200.0, "HITCOUNT": 5.0}
"""The most of a rise paid in one step (a rocket's or the BFG's damage would dwarf all)."""
FLOORS = {"HEALTH": 0.0, "ARMOR": 0.0}
"""The least a variable counts for: a player killed by its own rocket on ViZDoom's duel map
read a health of -999,900 (a fall that would have paid -3,000); dead is 0 here."""
STATUS = ("SELECTED_WEAPON", "SELECTED_WEAPON_AMMO", "DEAD")
"""Variables read for the rules, not paid for their changes."""


def _preference(weapon: int) -> float:
    return float(WEAPON_PREFERENCE.get(weapon, 1))


@dataclass(frozen=True)
class Scheme:
    """What a step's changes pay: ``rates[name] = (per unit risen, per unit fallen)`` (a
    fall of 2 pays twice the second), and ``held[k]`` each step weapon ``k`` is held."""

    rates: dict[str, tuple[float, float]]
    held: dict[int, float]

    @property
    def variables(self) -> tuple[str, ...]:
        """Every game variable the scheme reads (ViZDoom's ``GameVariable`` names)."""
        return (*self.rates, *STATUS)


def _sample_factory() -> Scheme:
    rates = {
        "FRAGCOUNT": (1.0, -1.5),
        "DEATHCOUNT": (-0.75, 0.75),
        "HITCOUNT": (0.01, -0.01),
        "DAMAGECOUNT": (0.003, -0.003),
        "HEALTH": (0.005, -0.003),
        "ARMOR": (0.005, -0.001),
    }
    for weapon in range(WEAPONS):
        preference = _preference(weapon)
        rates[f"WEAPON{weapon}"] = (0.02 * preference, -0.01 * preference)
        rates[f"AMMO{weapon}"] = (0.0002 * preference, -0.0001 * preference)
    return Scheme(rates, {weapon: 0.0002 * _preference(weapon) for weapon in range(WEAPONS)})


def _sample_factory_zero_sum() -> Scheme:
    scheme = _sample_factory()
    rates = {
        **scheme.rates,
        "FRAGCOUNT": (1.0, -0.001),
        "DEATHCOUNT": (-1.0, 1.0),
        "HITCOUNT": (0.0, 0.0),
        "DAMAGECOUNT": (0.01, -0.01),
        "HEALTH": (0.01, -0.01),
    }
    return Scheme(rates, scheme.held)


SCHEMES = {
    "sample_factory": _sample_factory(),
    "sample_factory_zero_sum": _sample_factory_zero_sum(),
}
"""The schemes by ``env.kwargs.shaping`` name."""


@dataclass
class PlayerShaping:
    """One player's shaped reward, step by step, from its game variables (see the module
    docstring); :meth:`reset` at each episode's start."""

    scheme: Scheme
    _last: dict[str, float] = field(default_factory=dict)
    _was_dead: bool = True
    _selected: deque = field(default_factory=lambda: deque(maxlen=HELD_STEPS))

    def reset(self) -> None:
        """A new episode: nothing to compare the first step with."""
        self._last = {}
        self._was_dead = True
        self._selected.clear()

    def step(self, values: dict[str, float], episode_over: bool) -> float:
        """The step's pay, given the variables' values after it (``values``, by name) and
        whether the episode ended with it."""
        values = {name: max(value, FLOORS.get(name, value)) for name, value in values.items()}
        weapon = int(max(0.0, values.get("SELECTED_WEAPON", 0.0)))
        loaded = values.get("SELECTED_WEAPON_AMMO", 0.0) > 0
        self._selected.append(weapon)
        alive = not values.get("DEAD", 0.0)
        respawned = self._was_dead and alive
        pay = 0.0
        if self._last and not episode_over and not respawned:
            for name, (risen, fallen) in self.scheme.rates.items():
                change = values.get(name, 0.0) - self._last[name]
                change = min(change, CAPS.get(name, change))
                pay += change * risen if change > 0 else -change * fallen
            held = len(self._selected) == HELD_STEPS and len(set(self._selected)) == 1
            if loaded and held:
                pay += self.scheme.held.get(weapon, 0.0)
        self._last = {name: values.get(name, 0.0) for name in self.scheme.rates}
        self._was_dead = not alive
        return pay
