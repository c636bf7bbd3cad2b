"""The run's random streams: one home, distinct tags, and the numbers they have always given."""

from __future__ import annotations

import numpy as np

from neuroplug.runtime import seeds


def test_every_stream_has_its_own_name_and_purpose():
    names = [stream.name for stream in seeds.STREAMS]
    assert len(set(names)) == len(names)
    assert all(stream.purpose for stream in seeds.STREAMS)
    # Streams keyed the same way never share a tag.
    episode_keyed = (seeds.EPISODE, seeds.NOOP, seeds.ACTION_NOISE, seeds.SEGMENT)
    assert len({stream.tag for stream in episode_keyed}) == len(episode_keyed)


def test_episode_seeds_depend_on_seed_generation_and_episode_only():
    first = seeds.episode_seeds(0, 3, np.arange(5))
    assert np.array_equal(first[[4, 1]], seeds.episode_seeds(0, 3, np.array([4, 1])))
    assert len(set(first.tolist())) == 5
    assert not np.array_equal(first, seeds.episode_seeds(0, 4, np.arange(5)))
    assert not np.array_equal(first, seeds.episode_seeds(1, 3, np.arange(5)))
    assert first.min() >= 0 and first.max() < 2**31


def test_streams_give_the_numbers_runs_were_made_with():
    """Pinned to the values of the code before the streams moved here (2026-11-25): a
    change to a tag or a key's layout changes every run's results, so it must be a choice."""
    assert seeds.episode_seeds(3, 7, np.arange(4), 2).tolist() == [
        32029025,
        1345228681,
        218917308,
        1123537613,
    ]
    assert seeds.start_noop_counts(3, 7, np.arange(6), 2, 30).tolist() == [12, 23, 7, 20, 1, 23]
    assert seeds.action_noise_keys(3, 7, 2, items=3, first_item=2).tolist() == [
        895668838,
        1559830076,
        515002523,
    ]
    assert seeds.segment_generator_seed(3, 5) == 6506962887108139778
    assert seeds.segment_episode_seeds(3, 5, 3).tolist() == [118324692, 1115543657, 798235926]
    assert seeds.replay_sampling_rng(3, 5).integers(0, 1000, 3).tolist() == [704, 908, 805]


def test_no_op_counts_stay_in_range_and_vary():
    counts = seeds.start_noop_counts(0, 3, np.arange(64), 0, 30)
    assert counts.min() >= 0 and counts.max() <= 30 and len(set(counts.tolist())) > 10
    assert seeds.start_noop_counts(0, 3, np.arange(4), 0, 0).tolist() == [0, 0, 0, 0]
