"""Behavior characterisations: resolution per env, clear errors, and the EnvPool facts they rely on."""

from __future__ import annotations

import numpy as np
import pytest
from envpool_build import skip_unless_envpool_has

from neuroplug.api import EvaluationRequest
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError
from neuroplug.evaluation.behaviors import Behavior, resolve
from neuroplug.evaluation.episodes import EpisodeLedger


def _spec(task_id: str, **kwargs):
    skip_unless_envpool_has(task_id)
    return make_spec(EnvConfig(task_id=task_id, **kwargs))


@pytest.mark.parametrize(
    ("task_id", "name", "info_keys", "size"),
    [
        ("CartPole-v1", "final_obs", (), 4),
        ("HalfCheetah-v4", "final_position", ("x_position",), 1),
        ("Hopper-v4", "final_position", ("x_position",), 1),
        ("Humanoid-v4", "final_position", ("x_position", "y_position"), 2),
        ("Pong-v5", "final_ram", ("ram",), 128),
        ("CheetahRun-v1", "final_obs", (), 17),
    ],
)
def test_auto_picks_the_bc_of_the_env_family(task_id, name, info_keys, size):
    bounds = ((0.0, 255.0),) * 128 if name == "final_ram" else None  # RAM bytes
    assert resolve("auto", _spec(task_id)) == Behavior(name, info_keys, size, bounds=bounds)


@pytest.mark.parametrize(
    ("behavior", "names"),
    [
        (
            Behavior("final_position", ("x_position", "y_position"), 2),
            ("final x_position", "final y_position"),
        ),
        (
            Behavior("feet_contact", ("foot_contact_0", "foot_contact_1"), 2),
            ("foot_contact_0", "foot_contact_1"),
        ),
        (Behavior("final_ram", ("ram",), 3), ("final ram[0]", "final ram[1]", "final ram[2]")),
        (Behavior("final_obs", (), 2), ("final obs[0]", "final obs[1]")),
        (
            Behavior("final_position", (), 2, obs_start=40),
            ("final position[40]", "final position[41]"),
        ),
        (Behavior("my_pkg.qd:fn", (), 1, function="my_pkg.qd:fn"), ("my_pkg.qd:fn[0]",)),
    ],
)
def test_each_dimension_has_a_name_for_plots(behavior, names):
    assert behavior.dimension_names() == names


@pytest.mark.parametrize(
    ("task_id", "start", "size"),
    [("PointMassEasy-v1", 0, 2), ("CartpoleSwingup-v1", 0, 1), ("HumanoidRunPureState-v1", 40, 2)],
)
def test_dm_control_final_position_comes_from_the_observation(task_id, start, size):
    assert resolve("final_position", _spec(task_id)) == Behavior(
        "final_position", (), size, obs_start=start
    )


def test_dm_control_final_position_is_the_point_mass_position_at_the_end():
    spec = _spec("PointMassEasy-v1", max_episode_steps=20)
    behavior = resolve("final_position", spec)
    pool = make_pool(spec, np.array([3]))
    _, (final, _) = _play_until_done(pool, np.ones((1, 2)))
    bc = behavior.extract(final, {}, np.array([0]))
    assert bc.shape == (1, 2) and np.array_equal(bc, final[:, :2])


def test_final_obs_applies_to_any_vector_env():
    assert resolve("final_obs", _spec("Hopper-v4")).size == 11


def test_final_obs_takes_the_observation_spaces_range_where_it_is_finite():
    # Pendulum observes (cos, sin, angular velocity), each in a declared finite range;
    # CartPole's velocities are unbounded, so its archive still needs algo.bounds.
    assert resolve("final_obs", _spec("Pendulum-v1")).bounds == ((-1, 1), (-1, 1), (-8, 8))
    assert resolve("final_obs", _spec("Pendulum-v1", observation_mask=[0])).bounds == (
        (-1, 1),
        (-8, 8),
    )
    assert resolve("final_obs", _spec("CartPole-v1")).bounds is None
    gymnasium = make_spec(EnvConfig(id="Pendulum-v1"))
    assert resolve("final_obs", gymnasium).bounds == ((-1, 1), (-1, 1), (-8, 8))


@pytest.mark.parametrize(
    ("task_id", "name", "message"),
    [
        ("CartPole-v1", "final_ram", r"final_ram needs info\['ram'\].*CartPole-v1 has none"),
        ("CartPole-v1", "final_position", r"final_position needs info\['x_position'\]"),
        ("Pong-v5", "final_obs", "final_obs needs vector observations; Pong-v5 observes images"),
        ("Reacher-v4", "auto", "auto means final_position for mujoco envs"),
        ("CartPole-v1", "final_velocity", "unknown behavior 'final_velocity'"),
        ("CheetahRun-v1", "final_position", "CheetahRun-v1 observes none"),
    ],
)
def test_a_bc_that_does_not_apply_names_the_field_and_what_fits(task_id, name, message):
    with pytest.raises(ConfigError, match=r"^algo\.behavior: ") as error:
        resolve(name, _spec(task_id))
    assert error.match(message)


def test_the_error_lists_the_bcs_that_fit_the_env():
    own = r", module:function, a descriptor of your own \(docs/algorithms/quality-diversity.md\)\)$"
    with pytest.raises(ConfigError, match=r"Reacher-v4 has none \(allowed: final_obs" + own):
        resolve("auto", _spec("Reacher-v4"))
    with pytest.raises(ConfigError, match=r"allowed: auto, final_obs" + own):
        resolve("final_ram", _spec("CartPole-v1"))
    with pytest.raises(ConfigError, match=r"allowed: auto, final_ram" + own):
        resolve("final_obs", _spec("Pong-v5"))


def test_extract_reads_the_requested_rows():
    observations = np.arange(12.0).reshape(3, 4)
    info = {"x_position": np.array([0.5, 1.5, 2.5]), "y_position": np.array([-1.0, -2.0, -3.0])}
    rows = np.array([2, 0])
    assert np.array_equal(
        Behavior("final_obs", (), 4).extract(observations, info, rows), observations[[2, 0]]
    )
    position = Behavior("final_position", ("x_position", "y_position"), 2)
    assert np.array_equal(position.extract(observations, info, rows), [[2.5, -3.0], [0.5, -1.0]])


# --------------------------------------------------------------------------- feet contact and your own


def test_feet_contact_reads_the_wrapped_walkers_rates_in_the_unit_range():
    pytest.importorskip("mujoco")
    wrapped = EnvConfig(id="Walker2d-v5", wrappers=["neuroplug.envs.feet_contact:FeetContactRates"])
    behavior = resolve("feet_contact", make_spec(wrapped))
    assert behavior.info_keys == ("foot_contact_0", "foot_contact_1")
    assert behavior.size == 2 and behavior.bounds == ((0.0, 1.0), (0.0, 1.0))
    with pytest.raises(
        ConfigError, match=r"FeetContactRates.*EnvPool's MuJoCo reports no contacts"
    ):
        resolve("feet_contact", make_spec(EnvConfig(id="Walker2d-v5")))


def test_a_descriptor_function_is_sized_by_one_call_and_reads_the_final_steps():
    behavior = resolve("descriptors:cart_and_pole", _spec("CartPole-v1"))
    assert behavior.size == 2 and behavior.function == "descriptors:cart_and_pole"
    observations = np.arange(12.0).reshape(3, 4)
    values = behavior.extract(observations, {}, np.array([2, 0]))
    assert np.array_equal(values, [[8.0, 10.0], [0.0, 2.0]])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("descriptors:one_value", r"returned shape \(1,\) for one episode"),
        ("descriptors:broken", r"failed on one zero observation \(1, 4\).*KeyError"),
        ("descriptors:NOT_A_FUNCTION", "is a int, not a function"),
        ("descriptors:missing", "module 'descriptors' has no 'missing'"),
        ("no_such_package.qd:descriptor", "does not import"),
    ],
)
def test_a_descriptor_function_that_cannot_serve_is_refused_naming_it(name, message):
    with pytest.raises(ConfigError, match=r"^algo\.behavior: ") as error:
        resolve(name, _spec("CartPole-v1"))
    assert error.match(message)


# --------------------------------------------------------------------------- EnvPool facts


def _play_until_done(pool, action):
    """Step one-env ``pool`` until its episode ends; return (previous, final) steps' obs and info."""
    observation, info = pool.reset()
    while True:
        previous = (observation, info)
        observation, _, terminated, truncated, info = pool.step(action)
        if terminated[0] or truncated[0]:
            return previous, (observation, info)


def test_the_done_step_carries_the_final_observation_before_the_auto_reset():
    pool = make_pool(_spec("CartPole-v1"), np.array([3]))
    _, (final, _) = _play_until_done(pool, np.zeros(1, dtype=np.int32))
    x, _, angle, _ = final[0]
    # CartPole terminates once the cart or the pole leaves its bounds: the final
    # observation is outside them, which a freshly reset one never is.
    assert abs(x) > 2.4 or abs(angle) > 0.2095
    reset, *_ = pool.step(np.zeros(1, dtype=np.int32))
    assert np.all(np.abs(reset) < 0.05)


def test_the_done_step_carries_the_final_mujoco_position():
    spec = _spec("Hopper-v4")
    pool = make_pool(spec, np.array([3]))
    (_, before), (_, final) = _play_until_done(pool, np.ones((1, 3), dtype=np.float32))
    # One step moves the hopper millimetres, and a reset would put it back near 0.
    assert abs(final["x_position"][0] - before["x_position"][0]) < 0.05
    assert final["x_position"][0] > 0.05
    _, _, _, _, after = pool.step(np.ones((1, 3), dtype=np.float32))
    assert after["elapsed_step"][0] == 0


def test_the_done_step_carries_the_atari_ram():
    pool = make_pool(_spec("Pong-v5", max_episode_steps=30), np.array([3]))
    _, (_, final) = _play_until_done(pool, np.zeros(1, dtype=np.int32))
    assert final["elapsed_step"][0] == 30
    assert final["ram"].shape == (1, 128) and final["ram"].dtype == np.uint8


# --------------------------------------------------------------------------- the ledger


def test_the_ledger_returns_behaviors_shaped_members_episodes_size():
    request = EvaluationRequest(generation=0, episodes_per_member=2, behavior="final_obs")
    ledger = EpisodeLedger(3, request, frame_skip=1, behavior=Behavior("final_obs", (), 2))
    observations = np.arange(12.0).reshape(6, 2)
    # Items end in two batches, their rows in any order.
    ledger.record_ends(np.array([5, 0, 3]), observations, {}, np.array([0, 1, 2]))
    ledger.record_ends(np.array([1, 2, 4]), observations, {}, np.array([3, 4, 5]))
    behaviors = ledger.result().behaviors
    assert behaviors.shape == (3, 2, 2)
    assert np.array_equal(behaviors[2, 1], observations[0])  # item 5 = member 2, episode 1
    assert np.array_equal(behaviors[0, 0], observations[1])


def test_the_ledger_returns_no_behaviors_unless_asked():
    ledger = EpisodeLedger(2, EvaluationRequest(generation=0), frame_skip=1)
    ledger.record_ends(np.array([0, 1]), np.zeros((2, 4)), {}, np.array([0, 1]))
    assert ledger.result().behaviors is None


def test_the_ledger_refuses_a_behavior_request_without_the_resolved_bc():
    with pytest.raises(ValueError, match="neuroplug.evaluation.behaviors.resolve"):
        EpisodeLedger(2, EvaluationRequest(generation=0, behavior="auto"), frame_skip=1)


def test_the_ledger_refuses_to_report_behaviors_of_episodes_that_never_ended():
    request = EvaluationRequest(generation=0, behavior="final_obs")
    ledger = EpisodeLedger(2, request, frame_skip=1, behavior=Behavior("final_obs", (), 4))
    ledger.record_ends(np.array([0]), np.zeros((1, 4)), {}, np.array([0]))
    with pytest.raises(RuntimeError, match="1 episodes never reported their end"):
        ledger.result()
