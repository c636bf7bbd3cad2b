"""Frames with measurements: a Dict of an image and numbers packed into one frame, the
numbers below the pixels, each read back to within a level of its range."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from neuroplug.envs.measurements import measurement_layout, measurement_rows
from neuroplug.errors import ConfigError


def _space(size: int = 30, image=(40, 50, 3)):
    return spaces.Dict(
        {
            "screen": spaces.Box(0, 255, image, np.uint8),
            "health": spaces.Box(0.0, 200.0, (1,), np.float32),
            "ammo": spaces.Box(-1.0, 1.0, (size,), np.float32),
        }
    )


def test_the_numbers_go_below_the_pixels_and_come_back_within_a_level():
    layout = measurement_layout("task", _space(size=60))
    assert layout.count == 61 and layout.frame == (3, 40, 50)
    assert layout.shape == (3, 42, 50)  # 61 numbers: two rows of 50
    rng = np.random.default_rng(0)
    screen = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    ammo = rng.uniform(-1, 1, 60)
    packed = layout.pack({"screen": screen, "health": np.array([150.0]), "ammo": ammo})
    assert packed.dtype == np.uint8 and packed.shape == (3, 42, 50)
    pixels, values = layout.unpack(packed)
    assert np.array_equal(pixels, screen.transpose(2, 0, 1))
    # In the space's order: gymnasium's Dict sorts a plain dict's keys (ammo, health).
    expected = np.concatenate([ammo, [150.0]])
    steps = np.array([2.0] * 60 + [200.0]) / 255
    assert np.all(np.abs(values - expected) <= steps / 2 + 1e-9)
    assert not packed[1:, 40:].any() and not packed[0, 41, 11:].any()  # the rest is 0


def test_a_number_outside_its_range_is_read_at_the_range_s_end():
    layout = measurement_layout("task", _space(size=1, image=(36, 36)))
    assert layout.frame == (1, 36, 36)
    screen = np.zeros((36, 36), np.uint8)
    packed = layout.pack({"screen": screen, "health": np.array([-40.0]), "ammo": np.array([3.0])})
    assert list(packed[0, 36, :2]) == [255, 0]  # ammo 3 (above 1), health -40 (below 0)


def test_rows_hold_as_many_numbers_as_the_frame_is_wide():
    assert [measurement_rows(count, 80) for count in (0, 1, 80, 81)] == [0, 1, 1, 2]


def test_only_an_image_beside_bounded_numbers_is_packed():
    assert measurement_layout("task", spaces.Box(0, 1, (3,))) is None
    vectors = spaces.Dict({"a": spaces.Box(0, 1, (3,)), "b": spaces.Box(0, 1, (2,))})
    assert measurement_layout("task", vectors) is None  # numbers alone: flattened elsewhere
    unbounded = spaces.Dict(
        {"screen": spaces.Box(0, 255, (40, 40), np.uint8), "speed": spaces.Box(-np.inf, 0, (2,))}
    )
    with pytest.raises(ConfigError, match="env.task_id: .*'speed'.*finite range"):
        measurement_layout("task", unbounded)
    two = spaces.Dict(
        {
            "left": spaces.Box(0, 255, (40, 40), np.uint8),
            "right": spaces.Box(0, 255, (40, 40), np.uint8),
        }
    )
    with pytest.raises(ConfigError, match=r"env.task_id: .*2 images"):
        measurement_layout("task", two)


def test_an_envpool_task_s_info_entries_go_below_its_frame_stack():
    """``env.measurements``: frames ``(C, H, W)`` as EnvPool stacks them, their info
    entries below channel 0's pixels in the order given, read back within a level; a
    deployed policy packs the same from ``{obs, <entries>}``."""
    from neuroplug.envs.measurements import MeasurementLayout, info_measurement_layout

    ranges = {"HEALTH": [0, 200], "AMMO2": [0, 50]}
    layout = info_measurement_layout("D3Battle-v1", (4, 84, 84), ranges, frozenset(ranges))
    assert layout.shape == (4, 85, 84) and layout.keys == ("obs", "HEALTH", "AMMO2")
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
    values = np.array([[100.0, 10.0], [0.0, 50.0], [250.0, -3.0]])
    packed = layout.with_rows(frames, values)
    for row in range(3):
        pixels, read = layout.unpack(packed[row])
        assert np.array_equal(pixels, frames[row])
        expected = values[row].clip([0, 0], [200, 50])
        assert np.all(np.abs(read - expected) <= np.array([200, 50]) / 255 / 2 + 1e-9)
        one = {"obs": frames[row], "HEALTH": values[row, 0], "AMMO2": values[row, 1]}
        assert np.array_equal(layout.pack(one), packed[row])
    assert not packed[:, 1:, 84:].any() and not packed[:, 0, 84, 2:].any()
    again = MeasurementLayout.from_description(layout.describe())
    assert again == layout and again.channels_first


def test_info_measurements_need_frames_and_entries_the_task_reports():
    from neuroplug.envs.measurements import info_measurement_layout

    with pytest.raises(ConfigError, match=r"env.measurements: CartPole-v1's .* not frames"):
        info_measurement_layout("CartPole-v1", (4,), {"x": [0, 1]}, frozenset({"x"}))
    with pytest.raises(ConfigError, match=r"env.measurements.HELTH: .* no info entry") as raised:
        info_measurement_layout("D1Basic-v1", (4, 84, 84), {"HELTH": [0, 1]}, frozenset({"HEALTH"}))
    assert "HEALTH" in str(raised.value)
