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


class _Game:
    """A two-player game of flat screens: frame k's screen is all k; agent ``a`` ends at
    frame 6, ``b`` plays on (as in Warlords, where players leave one by one)."""

    possible_agents = ["a", "b"]
    metadata: dict = {}

    def __init__(self) -> None:
        self.np_random = np.random.default_rng(0)
        self.unwrapped = self

    def action_space(self, agent):
        from gymnasium.spaces import Discrete

        return Discrete(2)

    def reset(self, seed=None, options=None):
        self.frame, self.agents = 0, ["a", "b"]
        return self._screens(), {agent: {} for agent in self.agents}

    def _screens(self):
        return dict.fromkeys(self.agents, np.full((8, 8, 3), self.frame, np.uint8))

    def step(self, actions):
        assert set(actions) <= set(self.agents), "an agent that left was given an action"
        self.frame += 1
        ended = {agent: agent == "a" and self.frame == 6 for agent in self.agents}
        outcome = (
            self._screens(), dict.fromkeys(self.agents, 0.0), ended,
            dict.fromkeys(self.agents, False), {agent: {} for agent in self.agents},
        )  # fmt: skip
        self.agents = [agent for agent in self.agents if not ended[agent]]
        return outcome


def test_an_agent_that_ends_mid_step_sees_the_screen_it_ended_on_and_acts_no_more():
    from neuroplug.envs.multi_agent.atari import AtariFrames

    world = AtariFrames(_Game(), frame_skip=4, stack=2, size=4, clip_rewards=True)
    world.reset()
    world.step({"a": 0, "b": 0})  # frames 1-4
    seen, _, ended, *_ = world.step({"a": 0, "b": 0})  # frames 5-8; a ends on frame 6
    assert ended == {"a": True, "b": False} and world.agents == ["b"]
    assert (seen["a"][..., -1] == 6).all() and (seen["b"][..., -1] == 8).all()  # max of 2
    assert (seen["a"][..., 0] == 4).all() and (seen["b"][..., 0] == 4).all()


def test_an_unknown_game_is_refused_naming_the_setting():
    from neuroplug.envs.multi_agent.atari import parallel_env

    with pytest.raises(ConfigError, match=r"env.kwargs.game: no PettingZoo Atari game 'pongg'"):
        parallel_env(game="pongg")
