"""A learner's self-play (``selfplay=pool``): its pool, its seats, its draws and ratings
(:class:`~neuroplug.rl.self_play.leagues.Leagues` holds a population's, one each, and the
acting they share).

::

    the envs start             every world's first game seated: an opponent drawn, and
                               (symmetric games) the learner's agent
    each step                  the lanes' game rewards added; a world whose game ended
                               records its outcome (and the ratings), then is seated anew
    each segment's end         the tournament table and the ratings reported; every
                               snapshot_interval segments a frozen copy joins the pool
    a checkpoint               the pool: snapshots' weights, results and ratings
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.raw_steps import StepBatch
from neuroplug.envs.spec import EnvSpec
from neuroplug.opponents.bots import bot_name, load_bot
from neuroplug.opponents.pool import pool_for
from neuroplug.opponents.ratings import rating_model
from neuroplug.opponents.seating import learner_agent_indices
from neuroplug.rl.sampler import Episodes
from neuroplug.rl.self_play.seats import Seats
from neuroplug.runtime.devices import on_cpu
from neuroplug.runtime.seeds import self_play_rng


class League:
    """A learner's self-play over its ``num_envs`` envs (see the module docstring);
    ``others``: the population's members who join its pool as they are now."""

    def __init__(
        self, config: SelfPlayConfig, env: EnvSpec, seed: int, learner: Any, num_envs: int,
        others: Sequence[int] = (),
    ) -> None:  # fmt: skip
        self.config = config
        self.env = env
        self.seed = seed
        self.learner = learner
        model_bytes = sum(t.numel() * t.element_size() for t in learner.model.state_dict().values())
        self.pool = pool_for(
            config, model_bytes, f"frozen snapshots of a {model_bytes / 2**20:.1f} MiB model"
        )
        for target in config.bots:
            self.pool.add_bot(target, bot_name(target), load_bot(target, env))
        for member in others:  # a population's other members (selfplay.members)
            self.pool.add_member(member)
        self.seats = Seats(
            env.agents, num_envs, learner_agent_indices(env.agents, config.learner_agents)
        )
        self.rng = self_play_rng(seed, 0)
        self.rating = rating_model()
        self._seat_all = True
        self._length = np.zeros(num_envs, dtype=np.int64)
        self._after_end = np.zeros(num_envs, dtype=bool)
        """Lanes whose game just ended: their next step is the reset, not a move."""
        self._games = Episodes()

    # ------------------------------------------------------------------ the loop's calls

    def envs_started(self) -> None:
        """Every world starts a new game (seated at the segment's start)."""
        self._seat_all = True
        self.seats.score[:] = 0.0
        self._length[:] = 0
        self._after_end[:] = False

    def start_segment(self, segment: int) -> None:
        """The segment's draws; the worlds whose envs just started are seated."""
        self.rng = self_play_rng(self.seed, segment)
        self.pool.start_segment()
        if self._seat_all:
            for world in range(self.seats.worlds):
                self.seats.seat(world, self.pool.draw(self.rng), self.rng)
            self._seat_all = False

    def after_step(self, rows: slice, batch: StepBatch) -> None:
        """A step's results for the lanes ``rows``: scores added, finished games recorded
        (the learner's agents' as its games) and their worlds seated anew."""
        self._length[rows] += ~self._after_end[rows]
        self._after_end[rows] = False
        seats, lanes = self.seats, self.seats.lanes
        for world, outcome in seats.add_rewards(rows, batch.game_rewards, batch.game_over):
            opponent = int(seats.opponent[world])
            self.pool.record(opponent, outcome, self.rating)
            mine = slice(world * lanes, (world + 1) * lanes)
            for lane in np.flatnonzero(seats.learner_lane[mine]) + world * lanes:
                self._games.returns.append(float(seats.score[lane]))
                self._games.lengths.append(int(self._length[lane]))
                self._games.envs.append(int(lane))
            self._length[mine] = 0
            self._after_end[mine] = True
            seats.seat(world, self.pool.draw(self.rng), self.rng)

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
        pool.drop_unused(set(self.seats.opponent.tolist()))
        return stats, rows

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The pool (snapshots' weights, results, ratings)."""
        return self.pool.state_dict(lambda model: on_cpu(model.state_dict()))

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the pool; the worlds start new games (seated at the segment's start)."""

        def make_model(tensors):
            model = copy.deepcopy(self.learner.model).requires_grad_(False)
            model.load_state_dict(tensors)
            return model

        self.pool.load_state_dict(state, make_model, lambda target: load_bot(target, self.env))
        self._seat_all = True
