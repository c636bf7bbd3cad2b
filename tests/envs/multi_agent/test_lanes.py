"""Multi-agent worlds as pool lanes (``env.parallel_env``): each agent a slot with its own
observation, reward and episode end, worlds seeded once and reset as EnvPool's envs are,
a shared policy told each agent's role; what cannot be played is refused."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from neuroplug.config.schema import EnvConfig  # noqa: E402
from neuroplug.envs.make import make_pool, make_spec  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402


def _spec(**settings):
    return make_spec(EnvConfig(parallel_env="parallel_worlds:roles", kwargs=settings))


def test_each_agent_is_a_lane_with_its_own_observation_reward_and_end():
    spec = _spec(length=3)
    assert spec.agents == ("guard_0", "guard_1", "runner_0") and spec.lanes_per_env == 3
    assert spec.obs_shape == (3 + 2,) and spec.num_actions == 3  # padded, then two roles
    assert str(spec.family) == "multi_agent" and spec.max_episode_steps == 100_000
    pool = make_pool(spec, np.arange(6))  # two worlds
    pool.async_reset()
    observations, rewards, _, _, info = pool.recv()
    assert info["env_id"].tolist() == list(range(6)) and not rewards.any()
    np.testing.assert_array_equal(observations[:, 3:], [[1, 0], [1, 0], [0, 1]] * 2)
    assert (observations[[2, 5], 2] == 0).all()  # a runner's third entry is padding
    actions = np.array([1, 0, 2, 1, 1, 0])  # right, wrong, right; right, right, wrong
    for step in range(3):
        pool.send(actions, np.arange(6))
        _, rewards, terminated, truncated, _ = pool.recv()
        np.testing.assert_array_equal(rewards, [1, 0, 1, 1, 1, 0])
        assert not terminated.any() and truncated.all() == (step == 2)
    pool.send(actions, np.arange(6))  # ended worlds reset: first observations, reward 0
    _, rewards, _, truncated, info = pool.recv()
    assert not rewards.any() and not truncated.any() and not info["score"].any()
    pool.close()


def test_a_row_s_score_is_its_agent_s_own_where_its_env_reports_one_else_its_reward():
    """A world that pays a shaped reward (``paid_for``: 1 for action 0) reports each agent's
    score in its infos: the rows' scores are those, the rewards what a learner is paid; the
    learners' step driver gives the first as the game's rewards."""
    for paid_for, scores in ((None, [1, 0, 1]), (0, [1, 0, 1])):
        spec = _spec(length=3, **({} if paid_for is None else {"paid_for": paid_for}))
        assert spec.family.score_info_key == "score"
        steps = spec.pool_kind.step_batches(make_pool(spec, np.arange(3)), spec.family)
        steps.reset()
        steps.recv()
        steps.send(np.array([1, 0, 2]), np.arange(3))  # right, wrong, right for their roles
        batch = steps.recv()
        np.testing.assert_array_equal(batch.game_rewards, scores)
        np.testing.assert_array_equal(batch.rewards, scores if paid_for is None else [0, 1, 0])
        steps.close()


def test_a_world_is_seeded_once_by_its_first_slot():
    spec = _spec()

    def played(seeds):
        pool = make_pool(spec, np.asarray(seeds))
        pool.async_reset()
        seen = [pool.recv()[0]]
        for _ in range(7):  # past an episode's end: the next continues the world's RNG
            pool.send(np.ones(len(seeds), np.int64), np.arange(len(seeds)))
            seen.append(pool.recv()[0])
        pool.close()
        return np.stack(seen)

    first, again = played([4, 9, 9]), played([4, 1, 2])
    np.testing.assert_array_equal(first, again)  # the other slots' seeds are not read
    assert not np.array_equal(first, played([5, 9, 9]))


def test_a_world_steps_all_its_agents_or_none():
    pool = make_pool(_spec(), np.arange(6))
    pool.async_reset()
    pool.recv()
    pool.send(np.ones(3, np.int64), np.arange(3, 6))  # the second world alone: fine
    assert pool.recv()[0].shape == (3, 5)
    with pytest.raises(RuntimeError, match=r"slots \[0, 1\] name some agents of world 0"):
        pool.send(np.ones(2, np.int64), np.array([0, 1]))


def test_an_agent_that_leaves_early_plays_on_dead_until_its_world_ends():
    pool = make_pool(_spec(early=True, length=3), np.arange(3))  # runner_0 leaves at step 2
    pool.async_reset()
    pool.recv()
    rows = []
    for _ in range(3):
        pool.send(np.array([1, 1, 2]), np.arange(3))  # every agent's action right
        rows.append(pool.recv())
    left, dead = rows[1], rows[2]
    assert left[1][2] == 1.0 and left[0][2, :2].any()  # its last reward and observation
    assert not (left[2].any() or left[3].any())  # its end is held for its world's
    np.testing.assert_array_equal(dead[1], [1, 1, 0])  # dead: no reward, zero observation
    assert not dead[0][2].any()
    np.testing.assert_array_equal(dead[2], [False, False, True])  # it ended terminated,
    np.testing.assert_array_equal(dead[3], [True, True, False])  # the guards truncated
    pool.send(np.ones(3, np.int64), np.arange(3))  # the world resets: every agent back
    observations, rewards, terminated, truncated, _ = pool.recv()
    assert observations[2, :2].any() and not (rewards.any() or terminated.any() or truncated.any())
    pool.close()


def test_the_policies_need_one_action_space_and_the_refusal_names_the_mapping():
    with pytest.raises(ConfigError, match=r"env.policy_mapping: every policy .*action spaces"):
        _spec(wide=True)
    with pytest.raises(ConfigError, match=r"env.kwargs: parallel_worlds:roles refused"):
        _spec(colour="red")
    with pytest.raises(ConfigError, match=r"env.policy_mapping: got 'per_role'"):
        EnvConfig(parallel_env="parallel_worlds:roles", policy_mapping="per_role")
    with pytest.raises(ConfigError, match=r"env.parallel_env: .* not a PettingZoo"):
        make_spec(EnvConfig(parallel_env="parallel_worlds:not_a_world"))
    # A Dict of numbers alone (an 8 x 8 "screen" is no frame): not frames with measurements.
    gauges = EnvConfig(parallel_env="parallel_worlds:gauges", kwargs={"side": 8})
    with pytest.raises(ConfigError, match=r"env.parallel_env: .*one image and numbers beside"):
        make_spec(gauges)


def test_worlds_that_start_a_step_or_reset_are_all_started_before_any_is_waited_for():
    """Worlds with ``step_async``/``step_wait`` and ``reset_async``/``reset_wait`` (ViZDoom's:
    engines that are processes of their own) step and reset at once: a send starts each, then waits
    for each; the rows are the same as a world stepped in one call gives."""
    from parallel_worlds import CALLS

    def played(name):
        spec = make_spec(EnvConfig(parallel_env=f"parallel_worlds:{name}", kwargs={"length": 3}))
        pool = make_pool(spec, np.arange(9))  # three worlds
        pool.async_reset()
        rows = [pool.recv()[:4]]
        for step in range(4):  # past an episode's end
            pool.send(np.arange(9) % 3 + step % 2, np.arange(9))
            rows.append(pool.recv()[:4])
        pool.close()
        return rows

    CALLS.clear()
    started = played("started_roles")
    calls = [kind for kind, _ in CALLS]
    assert calls[:12] == ["start reset"] * 3 + ["wait reset"] * 3 + ["start"] * 3 + ["wait"] * 3
    assert len({world for _, world in CALLS[:3]}) == 3
    assert calls.count("start reset") == 3 * 2  # the episodes of 3 steps ended: again
    for got, expected in zip(started, played("roles"), strict=True):
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)


def test_worlds_in_worker_processes_give_the_rows_they_give_here():
    """``env.vectorization=processes``: whole worlds to each worker, and the same seeds and
    actions give the same rows as in this process, past episodes' ends and an agent that
    leaves early; a send naming one world's agents is answered by its worker alone."""

    def played(**where):
        config = EnvConfig(parallel_env="parallel_worlds:roles", **where)
        config.kwargs.update(early=True, length=3)
        spec = make_spec(config)
        pool = make_pool(spec, np.arange(10, 19))  # three worlds: two to one worker, one
        pool.async_reset()
        rows = [pool.recv()]
        actions = np.random.default_rng(0).integers(0, 3, (8, 9))
        for chosen in actions:
            pool.send(chosen, np.arange(9))
            rows.append(pool.recv())
        pool.send(np.ones(3, np.int64), np.arange(6, 9))  # the last world alone
        rows.append(pool.recv())
        pool.close()
        return spec, rows

    spec, here = played(vectorization="in_process")
    assert spec.pool_kind.stepping(spec).endswith("worlds step in this process")
    spec, there = played(vectorization="processes", workers=2)
    assert spec.pool_kind.stepping(spec).endswith("worlds step in 2 worker processes")
    for mine, theirs in zip(here, there, strict=True):
        for a, b in zip(mine[:4], theirs[:4], strict=True):
            np.testing.assert_array_equal(a, b)
        for key in ("env_id", "score"):
            np.testing.assert_array_equal(mine[4][key], theirs[4][key])


def test_worlds_whose_engines_run_apart_step_in_this_process_whatever_is_asked():
    """A world with ``step_async`` (ViZDoom's multiplayer games: its engines are processes
    of their own, already stepped at once) is never sent to worker processes."""
    config = EnvConfig(parallel_env="parallel_worlds:started_roles", vectorization="processes")
    spec = make_spec(config)
    assert spec.vectorization == "in_process"
    assert spec.pool_kind.stepping(spec).endswith("worlds step in this process")
