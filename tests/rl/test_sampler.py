"""The sampler: honest counters, auto-reset steps left out, true game scores on Atari,
and the same data whatever the number of env groups."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.rl.acting import Acted
from neuroplug.rl.sampler import Sampler


def _uniform_policy(num_actions: int, seed: int = 0):
    """Acts on the observations alone (so any grouping of envs sees the same actions)."""

    def act(observations: torch.Tensor, rows: slice, states: torch.Tensor | None = None):
        flat = observations.reshape(len(observations), -1).float()
        actions = (flat.sum(1) * 1000).long().abs() % num_actions
        zeros = torch.zeros(len(observations))
        return Acted(actions, zeros, zeros, actions.numpy().astype(np.int32))

    return act


def _rollout(task_id: str, groups: int, length: int, envs: int = 4, **options):
    env = make_spec(EnvConfig(task_id=task_id, max_episode_steps=options.pop("cap", None)))
    sampler = Sampler(env, envs, groups, 2, torch.device("cpu"), **options)
    sampler.start(np.arange(envs) + 100)
    try:
        rollout = sampler.rollout_with(_uniform_policy(env.num_actions), length)
    finally:
        sampler.close()
    return env, sampler, rollout


def test_every_valid_step_is_counted_and_the_step_after_an_end_is_left_out():
    _, sampler, rollout = _rollout("CartPole-v1", groups=1, length=120)
    assert sampler.env_steps == int(rollout.valid.sum())
    ends = torch.nonzero(rollout.ended[:-1])
    assert len(ends) > 0  # CartPole episodes end well within 120 steps of a bad policy
    for step, env in ends.tolist():
        assert not rollout.valid[step + 1, env]
    episodes = sampler.take_episodes()
    # CartPole pays 1 per step: a game's score is its length.
    assert episodes.returns == [float(length) for length in episodes.lengths]


@pytest.mark.parametrize("groups", [2, 3])
def test_groups_change_the_schedule_not_the_data(groups):
    _, _, single = _rollout("CartPole-v1", groups=1, length=60, envs=6)
    _, _, split = _rollout("CartPole-v1", groups=groups, length=60, envs=6)
    for field in ("observations", "actions", "rewards", "terminated", "ended", "valid"):
        assert torch.equal(getattr(single, field), getattr(split, field)), field


def test_atari_frames_are_four_per_step_and_scores_are_unclipped_whole_games():
    env, sampler, rollout = _rollout(
        "Breakout-v5", groups=2, length=300, reward_clip=True, episodic_life=True, cap=2000
    )
    assert env.frame_skip == 4
    assert rollout.observations.dtype == torch.uint8  # frames stay bytes until the network
    assert float(rollout.rewards.max()) <= 1.0  # the learner trains on clipped rewards
    episodes = sampler.take_episodes()
    assert episodes.returns  # whole games (five lives each) ended within the rollout
    # A lost life ends the learner's episode, not the game: more ends than games.
    assert int(rollout.ended.sum()) > len(episodes.returns)
    assert sampler.env_steps == int(rollout.valid.sum())


def test_games_run_on_across_rollouts_and_are_counted_whole():
    env = make_spec(EnvConfig(task_id="CartPole-v1"))
    sampler = Sampler(env, 6, 2, 2, torch.device("cpu"))
    sampler.start(np.arange(6) + 7)
    policy = _uniform_policy(env.num_actions)
    steps_per_env = np.zeros(6, dtype=np.int64)
    try:
        # Rollouts of 5 steps, far shorter than most games: none may be cut at a boundary.
        for _ in range(40):
            rollout = sampler.rollout_with(policy, 5)
            assert rollout.valid.shape == (5, 6)
            steps_per_env += rollout.valid.sum(0).numpy()
    finally:
        sampler.close()
    episodes = sampler.take_episodes()
    # Each game is booked to the env that played it: an env's games and its running one
    # hold exactly its steps.
    played = np.bincount(episodes.envs, weights=episodes.lengths, minlength=6) + sampler.length
    assert played.tolist() == steps_per_env.tolist()
    assert max(episodes.lengths) > 5  # games outlived the rollouts they started in
    assert episodes.returns == [float(length) for length in episodes.lengths]
    # Every counted step belongs to a finished game or to a game still running.
    assert sum(episodes.lengths) + int(sampler.length.sum()) == sampler.env_steps
    assert float(sampler.score.sum()) == float(sampler.length.sum())


@pytest.mark.parametrize("groups", [1, 2])
def test_a_recurrent_policys_state_counts_the_steps_of_its_episode(groups):
    # A "core" whose state is its step count in the episode: the stored states must be 0 at
    # every episode's first acted step and count up from there, across rollouts.
    env = make_spec(EnvConfig(task_id="CartPole-v1"))
    sampler = Sampler(env, 4, groups, 2, torch.device("cpu"), state_size=1)
    uniform = _uniform_policy(env.num_actions)

    def act(observations, rows, states):
        return uniform(observations, rows)._replace(states=states + 1)

    sampler.start(np.arange(4) + 100)
    try:
        rollouts = [sampler.rollout_with(act, 60) for _ in range(2)]
    finally:
        sampler.close()
    states = torch.cat([rollout.states[..., 0] for rollout in rollouts])
    starts = torch.cat([rollout.starts for rollout in rollouts])
    ended = torch.cat([rollout.ended for rollout in rollouts])
    valid = torch.cat([rollout.valid for rollout in rollouts])
    assert bool(starts[0].all())
    for step in range(1, len(states)):
        # An episode's first acted step follows EnvPool's reset step (two after its end).
        begins = ended[step - 2] if step >= 2 else torch.zeros(4, dtype=torch.bool)
        assert torch.equal(starts[step], begins), step
        expected = torch.where(begins, 0.0, states[step - 1] + 1)
        assert torch.equal(states[step], expected), step
    assert bool(valid[starts].all())  # a first step is always a valid one


def test_a_recurrent_policys_rollout_without_its_states_is_refused():
    # A scheduler's sampler that ignores SamplerRequest.state_size must not let the core
    # train from zeros at every step unnoticed.
    from neuroplug.errors import PluginError
    from neuroplug.rl.rollout_loop import checked_for_states

    _, sampler, rollout = _rollout("CartPole-v1", groups=1, length=4)
    assert rollout.states is None
    assert checked_for_states(rollout, sampler, state_size=0) is rollout
    with pytest.raises(PluginError, match="without core states for a recurrent policy"):
        checked_for_states(rollout, sampler, state_size=8)
