"""Self-play with a policy per team or agent (``env.policy_mapping`` with
``selfplay=pool``): each policy's learner plays the others live, or against their halls
of fame, as the populations per policy do (:mod:`neuroplug.evolution.policy_arena`).

::

    each game of a world    a policy drawn uniformly, then (with probability
                            1 - latest_share, once every other policy's hall holds an
                            entry) an entry of each other policy's hall on its agents,
                            uniform or by PFSP on the drawn policy's win rate against it:
                            only the drawn policy learns from the game, its outcome goes
                            to those halls; else live: every policy learns from its agents
    each segment's end      every snapshot_interval segments a frozen copy of each
                            policy joins its own hall (the oldest beyond pool_size retired)

Hall ``q``'s pool (:class:`~neuroplug.opponents.pool.OpponentPool`) rates its entries
against their challengers, the other policies' learners: ``selfplay/<q>_hall/...`` metrics
and tournament rows with a ``hall`` column, as the populations' halls report. The games
are seated where their worlds are stepped (:mod:`.seating`, :class:`~.seats.TeamSeats`),
from each world's own stream, so a sharded or Ray run draws the same games.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.opponents.pool import LIVE, Opponent, pool_for
from neuroplug.opponents.ratings import rating_model
from neuroplug.rl.sampler import Episodes
from neuroplug.rl.self_play.seating import Records, TeamSeatingSpec
from neuroplug.rl.self_play.seats import TEAM_STRIDE, TeamDraw
from neuroplug.runtime.devices import on_cpu


class TeamLeague:
    """The halls of fame of the policies ``learners`` (one per name of the env's policy
    mapping, in its order) over ``num_envs`` envs (see the module docstring): a lone
    learner's policies, or one member's of population-based training (``leagues``: how
    many members, what the memory check counts)."""

    def __init__(
        self,
        config: SelfPlayConfig,
        env: EnvSpec,
        seed: int,
        learners: Sequence[Any],
        num_envs: int,
        first: int = 0,
        leagues: int = 1,
    ) -> None:
        self.config = config
        self.learners = list(learners)
        self.first = first
        """The place of its first policy's learner among the population's (a member of
        population-based training holds learners ``first .. first + K - 1``)."""
        mapping = env_policies(env)
        self.names = mapping.names
        count = len(self.names)
        model_bytes = sum(
            t.numel() * t.element_size() for t in self.learners[0].model.state_dict().values()
        )
        # Refused where every policy's hall (of every member's league) together would not fit.
        self.halls = [
            pool_for(
                config,
                model_bytes * count * leagues,
                f"frozen snapshots of each of {count} policies' {model_bytes / 2**20:.1f} MiB "
                "models" + (f" for each of {leagues} members" if leagues > 1 else ""),
            )
            for _ in self.names
        ]
        self.spec = TeamSeatingSpec(tuple(env.agents), num_envs, tuple(mapping.of_agent), seed)
        """What the seatings of its envs are built from."""
        self.rating = rating_model()
        self.seated: dict[int, tuple[int, ...]] = {}
        """Each world's entries in the game it plays now, as the records say."""
        self._games = Episodes()
        self._live_games = 0

    # ------------------------------------------------------------------ the loop's calls

    def start_segment(self) -> None:
        """Begin the segment's counts."""
        self._live_games = 0
        for hall in self.halls:
            hall.start_segment()

    def draw_table(self) -> TeamDraw:
        """How the next rollout's games are drawn (every hall's weights as they stand)."""
        return TeamDraw(tuple(hall.draw_table() for hall in self.halls))

    def players(self, league: int) -> Iterator[tuple[int, Opponent | None, int | None]]:
        """``(key, entry, learner)`` of everyone who may play: each policy live (its
        learner's place, from :attr:`first`), and every hall's snapshots (``league``, its
        place among the leagues, is not needed: it holds every policy of its worlds)."""
        for policy, hall in enumerate(self.halls):
            yield policy * TEAM_STRIDE + LIVE, None, self.first + policy
            for entry in hall.entries.values():
                if entry.kind == "snapshot":
                    yield policy * TEAM_STRIDE + entry.id, entry, None

    def book(self, records: Records) -> None:
        """A rollout's records in (step, world) order: each game against halls of fame
        recorded in them (results, ratings), the learners' games kept, who plays now."""
        for _, _, drawn, outcome in sorted(records.results):
            self._live_games += all(entry == LIVE for entry in drawn)
            for policy, entry in enumerate(drawn):
                if entry != LIVE:
                    self.halls[policy].record(entry, outcome, self.rating)
        for _, world, drawn in sorted(records.seated):
            self.seated[world] = drawn
        self._games.extend(records.episodes())

    def take_games(self) -> Episodes:
        """The learners' games that ended since the last call (each lane's own score)."""
        games, self._games = self._games, Episodes()
        return games

    def end_segment(self, segment: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """Each hall's ``selfplay/<name>_hall/...`` metrics and tournament rows, and the
        segment's live games (``selfplay/live_games``); then, every ``snapshot_interval``
        segments, each policy's frozen copy joins its hall."""
        stats: dict[str, float] = {"selfplay/live_games": float(self._live_games)}
        rows: list[dict[str, Any]] = []
        for name, hall in zip(self.names, self.halls, strict=True):
            rows += [{"segment": segment + 1, "hall": name, **row} for row in hall.table()]
            for key, value in hall.report().items():
                stats[key.replace("selfplay/", f"selfplay/{name}_hall/", 1)] = value
        due = self.config.pool_size and (segment + 1) % self.config.snapshot_interval == 0
        for policy, hall in enumerate(self.halls):
            if due:
                frozen = copy.deepcopy(self.learners[policy].model).requires_grad_(False)
                hall.add_snapshot(frozen, segment + 1)
            hall.drop_unused({int(drawn[policy]) for drawn in self.seated.values()})
        return stats, rows

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Every hall (snapshots' weights, results, ratings)."""
        return {"halls": [hall.state_dict(lambda m: on_cpu(m.state_dict())) for hall in self.halls]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s halls; the worlds start new games."""
        for policy, (hall, saved) in enumerate(zip(self.halls, state["halls"], strict=True)):

            def make_model(tensors, policy=policy):
                model = copy.deepcopy(self.learners[policy].model).requires_grad_(False)
                model.load_state_dict(tensors)
                return model

            hall.load_state_dict(saved, make_model, _no_bot)
        self.seated = {}


def _no_bot(target: str):
    raise RuntimeError(f"a hall of fame holds no bots, and a checkpoint named {target!r}")
