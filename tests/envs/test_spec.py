"""EnvSpec's own reading of a task's spaces (neuroplug/envs/spec.py)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.spaces import Box

from neuroplug.envs.spec import EnvSpec


@pytest.mark.parametrize(
    ("low", "high", "bounds"),
    [
        ([-1.0, 0.0], [1.0, 8.0], ((-1.0, 1.0), (0.0, 8.0))),
        ([-1.0, -np.inf], [1.0, np.inf], None),  # an unbounded velocity
        ([-1.0, 0.0], [1.0, 0.0], None),  # an entry declared constant: no width to cut
    ],
)
def test_a_vector_box_has_bounds_only_where_each_entry_has_a_finite_width(low, high, bounds):
    space = Box(np.array(low, np.float32), np.array(high, np.float32), dtype=np.float32)
    assert EnvSpec.finite_bounds(space) == bounds


def test_images_and_discrete_spaces_have_no_bounds():
    assert EnvSpec.finite_bounds(Box(0, 255, (4, 84, 84), np.uint8)) is None
    assert EnvSpec.finite_bounds(object()) is None
