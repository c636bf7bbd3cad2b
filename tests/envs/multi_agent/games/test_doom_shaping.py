"""Sample Factory's reward shaping for Doom: a step's changes of the game variables paid at
their rates, rises capped, nothing on an episode's first or last step or on a respawn, and
a bonus for holding a loaded weapon."""

from __future__ import annotations

import pytest

from neuroplug.envs.multi_agent.games.doom_shaping import SCHEMES, PlayerShaping


def _player(scheme: str = "sample_factory") -> PlayerShaping:
    shaping = PlayerShaping(SCHEMES[scheme])
    shaping.reset()
    return shaping


def _values(**changed: float) -> dict[str, float]:
    """A live player with the pistol selected and no ammo (no held-weapon bonus)."""
    return {"HEALTH": 100.0, "SELECTED_WEAPON": 2.0, "SELECTED_WEAPON_AMMO": 0.0, **changed}


def test_a_step_pays_each_variable_s_rise_and_fall_at_its_rates():
    player = _player()
    assert player.step(_values(), False) == 0.0  # the first step: nothing to compare with
    assert player.step(_values(FRAGCOUNT=1.0), False) == pytest.approx(1.0)
    assert player.step(_values(FRAGCOUNT=0.0), False) == pytest.approx(-1.5)  # a suicide
    assert player.step(_values(HEALTH=80.0, DEATHCOUNT=0.0), False) == pytest.approx(-0.06)
    assert player.step(_values(HEALTH=90.0), False) == pytest.approx(10 * 0.005)
    assert player.step(_values(HEALTH=90.0, WEAPON3=1.0, AMMO3=8.0), False) == pytest.approx(
        0.02 * 5 + 8 * 0.0002 * 5
    )
    zero_sum = _player("sample_factory_zero_sum")
    zero_sum.step(_values(), False)
    assert zero_sum.step(_values(DEATHCOUNT=1.0, HITCOUNT=3.0), False) == pytest.approx(-1.0)


def test_damage_and_hits_are_capped_and_a_respawn_or_the_last_step_pays_nothing():
    player = _player()
    player.step(_values(), False)
    assert player.step(_values(DAMAGECOUNT=1000.0, HITCOUNT=9.0), False) == pytest.approx(
        200 * 0.003 + 5 * 0.01
    )
    killed = _values(DAMAGECOUNT=1000.0, HITCOUNT=9.0, HEALTH=-999_900.0, DEAD=1.0)
    assert player.step(killed, False) == pytest.approx(100 * -0.003)  # health counts from 0
    back = _values(DAMAGECOUNT=1000.0, HITCOUNT=9.0, HEALTH=100.0)  # health restored
    assert player.step(back, False) == 0.0
    assert player.step({**back, "FRAGCOUNT": 1.0}, True) == 0.0  # the episode's last step


def test_holding_a_loaded_weapon_pays_its_preference_after_five_steps():
    player = _player()
    plasma = _values(SELECTED_WEAPON=6.0, SELECTED_WEAPON_AMMO=40.0)
    paid = [player.step(plasma, False) for _ in range(6)]
    assert paid[1:4] == [0.0, 0.0, 0.0] and paid[4:] == pytest.approx([0.002, 0.002])
    assert player.step(_values(SELECTED_WEAPON=2.0, SELECTED_WEAPON_AMMO=40.0), False) == 0.0
    player.reset()  # a new episode: the history starts again
    assert player.step(plasma, False) == 0.0
