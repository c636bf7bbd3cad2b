"""Two-player Atari (``env=pong_ma``): PettingZoo's game on ROMs from ale-py, frames
preprocessed as CleanRL's script does, each paddle a lane seeing its side."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tinyscaler")
pytest.importorskip("ale_py")
pytest.importorskip("multi_agent_ale_py")

from neuroplug.envs.make import make_pool, make_spec  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402


def test_two_player_pong_is_two_lanes_of_stacked_frames_with_their_side(compose):
    from neuroplug.experiment.typed import typed_experiment

    spec = make_spec(typed_experiment(compose(["env=pong_ma"])).env)
    assert spec.agents == ("first_0", "second_0") and spec.num_actions == 6
    assert spec.obs_shape == (4 + 2, 84, 84) and spec.obs_dtype == np.uint8  # 4 frames, 2 sides
    pool = make_pool(spec, np.arange(2))
    pool.async_reset()
    observations, rewards, *_ = pool.recv()
    assert observations.shape == (2, 6, 84, 84) and not rewards.any()
    assert (observations[0, 4] == 255).all() and (observations[0, 5] == 0).all()
    assert (observations[1, 5] == 255).all() and (observations[1, 4] == 0).all()
    pool.send(np.array([1, 1]), np.arange(2))
    assert pool.recv()[0].shape == (2, 6, 84, 84)
    pool.close()


def test_the_frames_rewards_and_episode_ends_are_supersuits_as_cleanrl_makes_them():
    pytest.importorskip("supersuit")
    from neuroplug.envs.multi_agent.atari import parallel_env, supersuit_frames

    # Episodes of 100 steps (400 frames, PettingZoo's cap), so they end within the test.
    theirs, ours = supersuit_frames(max_cycles=400), parallel_env(max_cycles=400)
    assert ours.observation_space("first_0") == theirs.observation_space("first_0")
    rng = np.random.default_rng(0)
    seen, expected = ours.reset(seed=3)[0], theirs.reset(seed=3)[0]
    episodes, points = 0, 0
    for _ in range(300):
        for agent in expected:
            assert np.array_equal(seen[agent], expected[agent])
        actions = {agent: int(rng.integers(6)) for agent in theirs.agents}
        seen, *outcome = ours.step(actions)
        expected, *reference = theirs.step(actions)
        assert outcome == reference and ours.agents == theirs.agents
        points += sum(reward != 0 for reward in outcome[0].values())
        if not theirs.agents:  # the next episode continues the game's RNG, unseeded
            episodes += 1
            seen, expected = ours.reset()[0], theirs.reset()[0]
    assert episodes == 3 and points > 0


def test_an_unknown_game_is_refused_naming_the_setting():
    from neuroplug.envs.multi_agent.atari import parallel_env

    with pytest.raises(ConfigError, match=r"env.kwargs.game: no PettingZoo Atari game 'pongg'"):
        parallel_env(game="pongg")
