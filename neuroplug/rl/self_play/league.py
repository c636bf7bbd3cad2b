"""A learner's self-play (``selfplay=pool``), as the driver keeps it: its pool, its
ratings and results, its games (:class:`~neuroplug.rl.self_play.leagues.Leagues` holds a
population's, one each, and the acting they share). Who sits where in each world is the
sampler's (:mod:`.seating`: in this process, or on each Ray sampler actor for its shards).

::

    each rollout's start       the pool's draw table (its weights as the results stand)
                               goes to the seatings with the weights
    each rollout's end         the seatings' records booked in (step, world) order: each
                               ended game's outcome (results, ratings), the learner's
                               games, who sits in each world now
    each segment's end         the tournament table and the ratings reported; every
                               snapshot_interval segments a frozen copy joins the pool
    a checkpoint               the pool: snapshots' weights, results and ratings
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.opponents.bots import bot_name, load_bot
from neuroplug.opponents.pool import LIVE, DrawTable, Opponent, pool_for
from neuroplug.opponents.ratings import rating_model
from neuroplug.opponents.seating import learner_agent_indices
from neuroplug.rl.sampler import Episodes
from neuroplug.rl.self_play.seating import Records, SeatingSpec
from neuroplug.runtime.devices import on_cpu


class League:
    """A learner's self-play over its ``num_envs`` envs (see the module docstring);
    ``others``: the population's members who join its pool as they are now; ``leagues``:
    how many leagues alike the run keeps (what the memory check counts)."""

    def __init__(
        self, config: SelfPlayConfig, env: EnvSpec, seed: int, learner: Any, num_envs: int,
        others: Sequence[int] = (), leagues: int = 1,
    ) -> None:  # fmt: skip
        self.config = config
        self.env = env
        self.seed = seed
        self.learner = learner
        model_bytes = sum(t.numel() * t.element_size() for t in learner.model.state_dict().values())
        # Refused where the run's ``leagues`` pools (a population's) together would not fit.
        self.pool = pool_for(
            config,
            model_bytes * leagues,
            f"frozen snapshots of a {model_bytes / 2**20:.1f} MiB model"
            + (f" for each of {leagues} members" if leagues > 1 else ""),
        )
        for target in config.bots:
            self.pool.add_bot(target, bot_name(target), load_bot(target, env))
        for member in others:  # a population's other members (selfplay.members)
            self.pool.add_member(member)
        self.spec = SeatingSpec(
            tuple(env.agents), num_envs,
            tuple(learner_agent_indices(env.agents, config.learner_agents)), seed,
        )  # fmt: skip
        """What the seatings of its envs are built from."""
        self.rating = rating_model()
        self.seated: dict[int, int] = {}
        """Each world's opponent in the game it plays now, as the records say."""
        self._games = Episodes()

    # ------------------------------------------------------------------ the loop's calls

    def start_segment(self) -> None:
        """Begin the segment's counts."""
        self.pool.start_segment()

    def draw_table(self) -> DrawTable:
        """How the next rollout's games draw their opponents."""
        return self.pool.draw_table()

    def players(self, learner: int) -> Iterator[tuple[int, Opponent | None, int | None]]:
        """``(pool id, entry, learner)`` of everyone who may play in this league, whose
        learner is ``learner`` (a population's member): ``learner`` itself (at
        :data:`LIVE`), then the snapshots, bots and other members (``learner``: the member
        whose live weights play, else None)."""
        yield LIVE, None, learner
        for entry in self.pool.entries.values():
            if entry.kind != "latest":
                yield entry.id, entry, (entry.member if entry.kind == "member" else None)

    def book(self, records: Records) -> None:
        """A rollout's records (of every seating of its envs): each ended game's outcome
        recorded (results, ratings) in (step, world) order, the learner's games kept, and
        who sits in each world now."""
        for _, _, opponent, outcome in sorted(records.results):
            self.pool.record(opponent, outcome, self.rating)
        for _, world, opponent in sorted(records.seated):
            self.seated[world] = opponent
        self._games.extend(records.episodes())

    def take_games(self) -> Episodes:
        """The learner's games that ended since the last call (its agents' scores)."""
        games, self._games = self._games, Episodes()
        return games

    def end_segment(self, segment: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The segment's ratings and win rates (``selfplay/...``) and the tournament table's
        rows; then, every ``snapshot_interval`` segments, a snapshot joins the pool."""
        pool = self.pool
        # Numbered as metrics.csv numbers it (segments completed), so a resumed run drops
        # the rows of segments its checkpoint did not hold.
        rows = [{"segment": segment + 1, **row} for row in pool.table()]
        stats = pool.report()
        if self.config.pool_size and (segment + 1) % self.config.snapshot_interval == 0:
            frozen = copy.deepcopy(self.learner.model).requires_grad_(False)
            pool.add_snapshot(frozen, segment + 1)
        pool.drop_unused(set(self.seated.values()))
        return stats, rows

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The pool (snapshots' weights, results, ratings)."""
        return self.pool.state_dict(lambda model: on_cpu(model.state_dict()))

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the pool; the worlds start new games (seated by their seatings)."""

        def make_model(tensors):
            model = copy.deepcopy(self.learner.model).requires_grad_(False)
            model.load_state_dict(tensors)
            return model

        self.pool.load_state_dict(state, make_model, lambda target: load_bot(target, self.env))
        self.seated = {}
