"""The replay buffer keeps each frame once and gives back exactly what was observed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.rl.acting import Acted
from neuroplug.rl.replay_buffer import ReplayBuffer
from neuroplug.rl.sampler import Sampler


def _random_policy(num_actions: int):
    generator = torch.Generator().manual_seed(0)

    def act(observations: torch.Tensor, rows: slice, states: torch.Tensor | None = None):
        actions = torch.randint(0, num_actions, (len(observations),), generator=generator)
        zeros = torch.zeros(len(observations))
        return Acted(actions, zeros, zeros, actions.numpy().astype(np.int32))

    return act


def _collect(task: str | EnvConfig, envs: int, steps: int, rollouts: int, capacity: int, **options):
    """Fill a buffer from a sampler; also returns every valid transition as observed:
    ``(obs, next obs, env, reward, terminated, ended)`` in the order they were stored."""
    cap = options.pop("cap", None)
    config = task if isinstance(task, EnvConfig) else EnvConfig(task_id=task, max_episode_steps=cap)
    env = make_spec(config)
    sampler = Sampler(env, envs, 1, 2, torch.device("cpu"))
    sampler.start(np.arange(envs) + 7)
    buffer = ReplayBuffer(capacity, envs, env, **options)
    stored = []
    try:
        for _ in range(rollouts):
            rollout = sampler.rollout_with(_random_policy(env.num_actions), steps)
            buffer.add_rollout(rollout)
            following = torch.cat((rollout.observations[1:], rollout.last_observations[None]))
            for step, env_index in torch.nonzero(rollout.valid).tolist():
                stored.append(
                    (
                        rollout.observations[step, env_index],
                        following[step, env_index],
                        env_index,
                        float(rollout.rewards[step, env_index]),
                        bool(rollout.terminated[step, env_index]),
                        bool(rollout.ended[step, env_index]),
                    )
                )
    finally:
        sampler.close()
    return env, buffer, stored


def _check_every_transition(buffer: ReplayBuffer, stored) -> int:
    """Every transition still held rebuilds the observed (obs, next obs) exactly; returns
    how many were checked (those whose frames were not overwritten)."""
    checked = 0
    first = len(stored) - len(buffer)
    for offset, (observation, following, *_) in enumerate(stored[first:]):
        index = (buffer.next_index - len(buffer) + offset) % buffer.capacity
        oldest = buffer.position[index] - buffer.stack + 1
        if oldest <= buffer.written[buffer.env[index]] - buffer.frames_per_env:
            continue  # its frames were overwritten: never sampled
        batch = _sample_one(buffer, index)
        assert torch.equal(batch["observations"][0], observation)
        assert torch.equal(batch["next_observations"][0], following)
        checked += 1
    return checked


def _sample_one(buffer: ReplayBuffer, index: int):
    """``buffer.sample`` restricted to one transition (through the same code path)."""

    class Fixed:
        def integers(self, low, high, size):
            return np.full(size, index)

    return buffer.sample(1, Fixed(), torch.device("cpu"))


def test_atari_frames_are_stored_once_and_stacks_rebuild_exactly():
    env, buffer, stored = _collect("Breakout-v5", envs=2, steps=100, rollouts=2, capacity=1000)
    assert _check_every_transition(buffer, stored) == len(buffer) == len(stored)
    frame_bytes = int(np.prod(env.obs_shape[1:]))
    # About one 84x84 frame per transition, not the 8 of (obs, next obs) stacks.
    assert buffer.bytes_per_transition < 1.2 * frame_bytes
    assert buffer.bytes_per_transition * 1_000_000 < 8e9


def test_colour_frames_are_stacks_of_three_channels_each_stored_once():
    config = EnvConfig(task_id="Breakout-v5", kwargs={"gray_scale": False})
    env, buffer, stored = _collect(config, envs=2, steps=60, rollouts=2, capacity=1000)
    assert env.obs_shape == (12, 84, 84) and env.frame_stack == 4
    assert _check_every_transition(buffer, stored) == len(buffer) == len(stored)
    assert buffer.bytes_per_transition < 1.2 * 3 * 84 * 84  # one colour frame a transition


def test_an_image_that_is_not_a_stack_is_stored_whole():
    """A colour screen's channels are one picture, not frames that shift by one each step
    (the old buffer rebuilt its observations from three steps' blue channels)."""
    config = EnvConfig(entry_point="corridor_env:ColourCorridor", max_episode_steps=9)
    env, buffer, stored = _collect(config, envs=2, steps=20, rollouts=3, capacity=200)
    assert env.obs_shape == (3, 36, 36) and env.frame_stack == 1
    assert _check_every_transition(buffer, stored) == len(buffer) == len(stored)


def test_vector_observations_round_trip_through_episode_ends_and_wraparound():
    _, buffer, stored = _collect("CartPole-v1", envs=3, steps=64, rollouts=3, capacity=200)
    assert len(buffer) == 200 < len(stored)  # the ring wrapped: only the newest are kept
    assert _check_every_transition(buffer, stored) >= 150


def _n_step_target(stored, start: int, n: int, gamma: float):
    """The n-step (return, next obs, discount) of ``stored[start]``, from its env's stream."""
    env = stored[start][2]
    stream = [t for t in stored[start:] if t[2] == env]
    total, discount, next_observation = 0.0, 1.0, None
    for k, (_, following, _, reward, terminated, ended) in enumerate(stream[:n]):
        total += gamma**k * reward
        discount = 0.0 if terminated else gamma ** (k + 1)
        next_observation = following
        if ended:
            break
    return total, next_observation, discount


def test_n_step_transitions_sum_their_windows_and_bootstrap_from_the_right_observation():
    gamma = 0.9
    # Episodes capped at 20 steps: windows close at terminations and at truncations.
    _, buffer, stored = _collect(
        "CartPole-v1", envs=3, steps=40, rollouts=2, capacity=1000, n_step=3, gamma=gamma, cap=20
    )
    assert len(buffer) == len(stored)
    assert any(t[4] for t in stored) and any(t[5] and not t[4] for t in stored)
    horizons = set()
    for index in range(len(stored)):
        total, following, discount = _n_step_target(stored, index, 3, gamma)
        batch = _sample_one(buffer, index)
        assert torch.equal(batch["observations"][0], stored[index][0])
        assert torch.equal(batch["next_observations"][0], following)
        assert float(batch["rewards"][0]) == pytest.approx(total, rel=1e-6, abs=1e-6)
        assert float(batch["discounts"][0]) == pytest.approx(discount, rel=1e-6)
        horizons.add(int(buffer.horizon[index]))
    assert horizons == {1, 2, 3}


@pytest.mark.parametrize(("capacity", "wrapped"), [(1000, False), (200, True)])
def test_a_checkpoint_holds_the_filled_part_and_restores_every_transition(capacity, wrapped):
    env, buffer, stored = _collect("CartPole-v1", envs=3, steps=64, rollouts=3, capacity=capacity)
    assert (len(stored) > capacity) == wrapped
    state = buffer.state_dict()
    assert len(state["rewards"]) == len(buffer)
    if not wrapped:  # the part seen so far, not the capacity
        assert len(state["rewards"]) == len(stored) < capacity
        assert state["frames"].shape[1] < buffer.frames_per_env
    restored = ReplayBuffer(capacity, 3, env)
    restored.load_state_dict(state)
    for index in range(len(buffer)):
        left, right = _sample_one(buffer, index), _sample_one(restored, index)
        for key, value in left.items():
            assert torch.equal(value, right[key]), key
    assert restored.next_index == buffer.next_index and len(restored) == len(buffer)


def _played_episodes(env, lengths, generator):
    """An evaluation's transitions, episode after episode (each row's observation the row
    before's next one within an episode), as ``(obs, actions, rewards, next obs, terminated)``."""
    rows = []
    for length in lengths:
        observation = generator.integers(0, 255, env.obs_shape).astype(env.obs_dtype)
        for step in range(length):
            following = generator.integers(0, 255, env.obs_shape).astype(env.obs_dtype)
            if env.is_image:  # a frame stack moves on by one frame
                following[:-1] = observation[1:]
            action = step if env.discrete else np.full(env.num_actions, step, np.float32)
            rows.append((observation, action, float(step), following, step == length - 1))
            observation = following
    columns = list(zip(*rows, strict=True))
    return (
        np.stack(columns[0]),
        np.asarray(columns[1]),
        np.asarray(columns[2], np.float32),
        np.stack(columns[3]),
        np.asarray(columns[4]),
    )


@pytest.mark.parametrize("task_id", ["Pendulum-v1", "Pong-v5"])
def test_evaluated_transitions_come_back_as_they_were_played(task_id):
    """Whole transitions from evaluations (episodes of different lengths, several calls,
    more than the capacity in all): every one held comes back exactly, the oldest gone."""
    env = make_spec(EnvConfig(task_id=task_id))
    generator = np.random.default_rng(3)
    buffer = ReplayBuffer(40, 1, env, from_evaluations=True)
    batches = [_played_episodes(env, lengths, generator) for lengths in ([1, 5, 3], [9, 1], [30])]
    for batch in batches:
        buffer.add_transitions(*batch)
    every = [np.concatenate(column) for column in zip(*batches, strict=True)]
    assert len(buffer) == 40 and len(every[0]) == 49
    drawn = buffer.sample(400, np.random.default_rng(0), torch.device("cpu"))
    held = {float(reward) for reward in every[2][-40:]}
    for row in range(400):
        reward = float(drawn["rewards"][row])
        assert reward in held
        match = [
            index
            for index in range(9, 49)
            if np.array_equal(every[0][index], drawn["observations"][row].numpy())
        ]
        assert len(match) == 1
        index = match[0]
        assert np.array_equal(every[3][index], drawn["next_observations"][row].numpy())
        assert float(every[2][index]) == reward
        assert np.array_equal(every[1][index], drawn["actions"][row].numpy())
        expected = 0.0 if every[4][index] else buffer.gamma
        assert float(drawn["discounts"][row]) == pytest.approx(expected)


def test_an_evaluated_buffer_round_trips_through_its_state():
    env = make_spec(EnvConfig(task_id="Pendulum-v1"))
    generator = np.random.default_rng(4)
    buffer = ReplayBuffer(30, 1, env, from_evaluations=True)
    buffer.add_transitions(*_played_episodes(env, [7, 12, 20], generator))
    restored = ReplayBuffer(30, 1, env, from_evaluations=True)
    restored.load_state_dict(buffer.state_dict())
    device = torch.device("cpu")
    left = buffer.sample(64, np.random.default_rng(1), device)
    right = restored.sample(64, np.random.default_rng(1), device)
    assert all(torch.equal(left[name], right[name]) for name in left)
