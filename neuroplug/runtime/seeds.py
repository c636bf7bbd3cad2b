"""Every random stream of a run, named in one place.

A run is reproducible because each stream is a pure function of the run seed and the
stream's own coordinates (generation, round, episode, segment), never of what ran
before it in the process. Each stream has a purpose and a tag; the tag keeps two streams
with the same coordinates apart. Modules ask this one for their generators and numbers,
so a new stream is one entry here, and two streams can never share a tag by accident
(``tests/runtime/test_seeds.py`` checks they are distinct).

The tags and the layout of each stream's key are part of the results: changing one
changes every run's numbers, so they stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Stream:
    """One random stream: what it drives and the tag that keeps it apart."""

    name: str
    tag: int
    purpose: str


EPISODE = Stream(
    "episode",
    0x5EED,
    "the env seed of each evaluation episode: (run seed, generation, round, episode index); "
    "every member's k-th episode shares it (common random numbers)",
)
NOOP = Stream(
    "noop",
    0x0A0B,
    "how many no-op actions an Atari evaluation episode starts with, per episode as above",
)
ACTION_NOISE = Stream(
    "action_noise",
    0xAC7,
    "one key per evaluation work item for its Gaussian action noise (drawn per step)",
)
SEGMENT = Stream(
    "segment",
    0x1EA,
    "a learner segment: its envs' seeds (as an episode round of its own) and the learner's "
    "torch generator (actions, minibatch order)",
)
REPLAY_SAMPLING = Stream(
    "replay_sampling",
    1,
    "a replay learner's minibatch draws in a segment (a sub-stream of the segment's)",
)
ACTING = Stream(
    "acting",
    0x5A5A,
    "a learner's action draws in a segment (its sampler's torch generator), a stream of its "
    "own beside the learner's minibatch order",
)
VALUE_HEAD = Stream(
    "value_head",
    1,
    "the actor-critic's value head initialisation, and an off-policy learner's critics "
    "(run seed + 1; the policy takes the seed)",
)
LOG_STD = Stream(
    "log_std",
    2,
    "an off-policy actor's log-std network initialisation (run seed + 2; algo=sac)",
)
POPULATION = Stream(
    "population",
    0xB0B,
    "a population of learners (algo=pbt): each member's own seed (its initial weights and "
    "every stream of its own), and the population's exploit-and-explore RNG",
)
SHARD = Stream(
    "shard",
    0x5A4D,
    "a learner's envs in shards (scheduler.envs_per_shard): each shard's action-sampling "
    "generator per segment, and the new episodes of a shard whose sampler was replaced",
)
CRITIC = Stream(
    "critic",
    0xC217,
    "the critics beside an evolving population (algo=cem_rl, erl): their initialisation, "
    "minibatch draws and target-smoothing noise, one torch generator for the run",
)
REFERENCE = Stream(
    "reference",
    0x7EF,
    "virtual batch norm's reference batch (net.vbn): its envs' seeds, random actions and "
    "which observations it keeps, once per run",
)
SELF_PLAY = Stream(
    "self_play",
    0x5E1F,
    "self-play's draws (selfplay=pool): each game's opponent and learner seat (a learner's "
    "per segment and world, an evolving population's per generation and round)",
)
STREAMS = (
    EPISODE,
    NOOP,
    ACTION_NOISE,
    SEGMENT,
    REPLAY_SAMPLING,
    ACTING,
    VALUE_HEAD,
    LOG_STD,
    POPULATION,
    SHARD,
    CRITIC,
    REFERENCE,
    SELF_PLAY,
)

EVALUATION_GENERATION_OFFSET = 1 << 30
"""The run's evaluations of its deployed policy play the episodes of generation
``EVALUATION_GENERATION_OFFSET + generation``: apart from the training episodes' seeds, and
the same for every run that evaluates at that generation."""


def _table(entropy: list[int], count: int) -> np.ndarray:
    return np.random.SeedSequence(entropy).generate_state(count, dtype=np.uint32)


def episode_seeds(
    run_seed: int, generation: int, episode_indices: np.ndarray, round: int = 0
) -> np.ndarray:
    """Environment seeds in [0, 2**31) for the given episode indices of a generation
    (:data:`EPISODE`)."""
    table = _table([run_seed, generation, EPISODE.tag, round], int(episode_indices.max()) + 1)
    return (table[episode_indices] & 0x7FFFFFFF).astype(np.int64)


def start_noop_counts(
    run_seed: int, generation: int, episode_indices: np.ndarray, round: int, most: int
) -> np.ndarray:
    """How many no-op actions each episode starts with: uniform in ``[0, most]``
    (:data:`NOOP`)."""
    if most <= 0 or len(episode_indices) == 0:
        return np.zeros(len(episode_indices), dtype=np.int64)
    table = _table([run_seed, generation, NOOP.tag, round], int(episode_indices.max()) + 1)
    return (table[episode_indices] % (most + 1)).astype(np.int64)


def action_noise_keys(
    run_seed: int, generation: int, round: int, items: int, first_item: int = 0
) -> torch.Tensor:
    """One 31-bit key per work item for its action noise, items ``first_item`` onwards of
    the whole population's (:data:`ACTION_NOISE`)."""
    table = _table([run_seed, generation, round, ACTION_NOISE.tag], first_item + items)
    return torch.from_numpy((table[first_item:] & 0x7FFFFFFF).astype(np.int64))


def segment_generator_seed(run_seed: int, segment: int) -> int:
    """The learner's torch generator seed for ``segment`` (:data:`SEGMENT`)."""
    sequence = np.random.SeedSequence([run_seed, segment, SEGMENT.tag])
    return int(sequence.generate_state(1, dtype=np.uint64)[0] >> 1)


def segment_episode_seeds(run_seed: int, segment: int, envs: int) -> np.ndarray:
    """The seeds of a learner's ``envs`` envs started at ``segment``: episode seeds of a
    round of their own (:data:`SEGMENT`)."""
    return episode_seeds(run_seed, segment, np.arange(envs), SEGMENT.tag)


def shard_generator_seed(run_seed: int, segment: int, shard: int) -> int:
    """Shard ``shard``'s action-sampling generator seed for ``segment`` (:data:`SHARD`):
    the same wherever the shard is stepped."""
    sequence = np.random.SeedSequence([run_seed, segment, shard, SHARD.tag])
    return int(sequence.generate_state(1, dtype=np.uint64)[0] >> 1)


def shard_restart_seeds(
    run_seed: int, segment: int, shard: int, restart: int, envs: int
) -> np.ndarray:
    """New episode seeds in [0, 2**31) for shard ``shard``'s ``envs`` envs when its sampler
    is replaced for the ``restart``-th time (counted over the run) in ``segment``
    (:data:`SHARD`)."""
    table = _table([run_seed, segment, SHARD.tag, shard, restart], envs)
    return (table & 0x7FFFFFFF).astype(np.int64)


def replay_sampling_rng(run_seed: int, segment: int) -> np.random.Generator:
    """The replay learner's minibatch RNG for ``segment`` (:data:`REPLAY_SAMPLING`)."""
    entropy = [run_seed, segment, SEGMENT.tag, REPLAY_SAMPLING.tag]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))


def self_play_rng(run_seed: int, segment: int) -> np.random.Generator:
    """Self-play's draws in ``segment`` (:data:`SELF_PLAY`)."""
    entropy = [run_seed, segment, SEGMENT.tag, SELF_PLAY.tag]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))


def self_play_world_rng(run_seed: int, segment: int, world: int) -> np.random.Generator:
    """A learner's self-play draws for world ``world`` in ``segment`` (:data:`SELF_PLAY`):
    a stream per world, so its games' opponents are the same wherever it is stepped."""
    entropy = [run_seed, segment, world, SEGMENT.tag, SELF_PLAY.tag]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))


def acting_seed(run_seed: int, segment: int) -> int:
    """The seed of a learner's action draws in ``segment`` (:data:`ACTING`): the segment's
    stream, apart from the learner's own generator (minibatch order)."""
    return segment_generator_seed(run_seed, segment) ^ ACTING.tag


def value_head_generator(run_seed: int) -> torch.Generator:
    """The generator of the actor-critic's value head init (:data:`VALUE_HEAD`)."""
    return torch.Generator().manual_seed(run_seed + VALUE_HEAD.tag)


def log_std_generator(run_seed: int) -> torch.Generator:
    """The generator of SAC's log-std network init (:data:`LOG_STD`)."""
    return torch.Generator().manual_seed(run_seed + LOG_STD.tag)


def critic_generator(run_seed: int) -> torch.Generator:
    """The generator of the critics beside a population (:data:`CRITIC`)."""
    return torch.Generator().manual_seed(int(_table([run_seed, CRITIC.tag], 1)[0] >> 1))


def algorithm_rng(run_seed: int) -> np.random.Generator:
    """An evolutionary algorithm's own RNG (its noise seeds, selections), from the run seed."""
    return np.random.Generator(np.random.Philox(run_seed))


def init_generator(seed: int) -> torch.Generator:
    """The generator of a network's initial parameters for ``seed`` (the run's center, or a
    fresh member described by its seed alone)."""
    return torch.Generator().manual_seed(int(seed))


def population_member_seed(run_seed: int, member: int) -> int:
    """Member ``member``'s own seed in a population of learners, in [0, 2**31)
    (:data:`POPULATION`): its initial network and every stream it draws itself."""
    table = _table([run_seed, POPULATION.tag, member], 1)
    return int(table[0] & 0x7FFFFFFF)


def population_rng(run_seed: int) -> np.random.Generator:
    """The population's exploit-and-explore RNG (:data:`POPULATION`): which better member a
    worse one copies, which settings change and by how much."""
    entropy = [run_seed, POPULATION.tag, 0xE7]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))


def reference_rng(run_seed: int) -> np.random.Generator:
    """The reference batch's generator (:data:`REFERENCE`): its envs' seeds, its random
    actions and which observations it keeps."""
    return np.random.Generator(np.random.Philox(np.random.SeedSequence([run_seed, REFERENCE.tag])))
