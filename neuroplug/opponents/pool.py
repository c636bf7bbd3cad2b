"""The opponent pool: the learner itself (entry 0), its frozen past snapshots, scripted
bots and, in a population of learners, the other members as they are now, each with its
games against the learner and its rating. The learner is a learner's
model (:mod:`neuroplug.rl.self_play`) or an evolving population (:mod:`neuroplug.evolution.
coevolution`, whose snapshots, the hall of fame, are its deployed policy's parameters).

A game's opponent is drawn when the game starts: the learner itself with probability
``latest_share``, else another entry (frozen, scripted or a member), uniformly or by
AlphaStar's prioritised
fictitious self-play (Vinyals et al. 2019): weight ``(1 - p)^power`` with ``p`` the
learner's win rate against the entry (draws half, one win and one loss assumed beforehand),
so the opponents it beats least are played most. Ratings are OpenSkill's Plackett-Luce
(:mod:`neuroplug.opponents.ratings`): the learner and each entry a
``(mu, sigma)``, updated after every game between two different players (a game against
itself rates nobody); a snapshot starts at the learner's rating when it was taken.

Entries keep their id for the run; a snapshot pushed out of the pool (beyond
``pool_size``) is retired: never drawn again, dropped once no world plays it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.opponents.bots import Bot
from neuroplug.runtime.devices import refuse_unless_it_fits

LIVE = 0
"""The learner itself, as it is now: entry 0."""

OUTCOMES = ("win", "draw", "loss")
"""A game's outcome for the learner."""
PLURALS = {"win": "wins", "draw": "draws", "loss": "losses"}


@dataclass
class Opponent:
    """One entry of the pool."""

    id: int
    name: str
    """``latest`` (the learner), ``snapshot@<segment>``, a bot's function name, or
    ``member<k>``."""
    kind: str
    """``latest``, ``snapshot``, ``bot`` or ``member``."""
    model: Any = None
    """A snapshot's frozen model (the learner's model class)."""
    bot: Bot | None = None
    """A bot's function."""
    bot_target: str = ""
    """A bot's ``selfplay.bots`` entry (what a resumed run loads again)."""
    member: int = -1
    """A member entry's member of the population (it plays with its live weights)."""
    segment: int = 0
    """When it joined the pool."""
    retired: bool = False
    """Pushed out of the pool: never drawn again."""
    results: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    """The learner's games against it over the run."""
    segment_results: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    """Those of the running segment."""
    mu: float = 25.0
    sigma: float = 25.0 / 3

    @property
    def games(self) -> int:
        return sum(self.results.values())

    def smoothed_win_rate(self) -> float:
        """The learner's score against it with a win and a loss added: 0.5 before any game,
        never 0 or 1 (what :meth:`OpponentPool.draw`'s PFSP weighs)."""
        results = self.results
        return (results["win"] + 0.5 * results["draw"] + 1) / (self.games + 2)

    def win_rate(self, results: dict[str, int] | None = None) -> float:
        """The learner's score against it, draws counting half (NaN before any game)."""
        results = self.results if results is None else results
        games = sum(results.values())
        return (results["win"] + 0.5 * results["draw"]) / games if games else math.nan


@dataclass(frozen=True)
class DrawTable:
    """An opponent draw with the weights fixed: the learner itself with probability
    ``latest_share`` (or when there is no other entry), else entry ``ids[i]`` with
    probability ``probabilities[i]``. Small and picklable: a sampler on another process
    draws a new game's opponent with it, from its world's own stream."""

    latest_share: float
    ids: tuple[int, ...]
    probabilities: tuple[float, ...]

    def draw(self, rng: np.random.Generator) -> int:
        """A new game's opponent id."""
        if not self.ids or rng.random() < self.latest_share:
            return LIVE
        return self.draw_other(rng)

    def draw_other(self, rng: np.random.Generator) -> int:
        """An entry other than the learner (there must be one)."""
        return self.ids[int(rng.choice(len(self.ids), p=np.asarray(self.probabilities)))]


class OpponentPool:
    """Entry 0 the learner; snapshots and bots after it (see the module docstring)."""

    def __init__(
        self, pool_size: int, latest_share: float, sampling: str, pfsp_power: float
    ) -> None:
        self.pool_size = pool_size
        self.latest_share = latest_share
        self.sampling = sampling
        self.pfsp_power = pfsp_power
        self.entries: dict[int, Opponent] = {LIVE: Opponent(LIVE, "latest", "latest")}
        self.next_id = 1

    @property
    def learner(self) -> Opponent:
        """Entry 0: the learner's own results (against itself) and rating."""
        return self.entries[LIVE]

    def add_bot(self, target: str, name: str, bot: Bot) -> Opponent:
        """Keep a scripted opponent for the run."""
        entry = Opponent(self.next_id, name, "bot", bot=bot, bot_target=target)
        self.entries[entry.id] = entry
        self.next_id += 1
        return entry

    def add_member(self, member: int) -> Opponent:
        """Keep another member of the population, playing as it is now, for the run."""
        entry = Opponent(self.next_id, f"member{member}", "member", member=member)
        self.entries[entry.id] = entry
        self.next_id += 1
        return entry

    def add_snapshot(self, model: Any, segment: int) -> Opponent:
        """Keep a frozen copy ``model`` of the learner, rated as the learner is now; the
        oldest active snapshot beyond ``pool_size`` retires."""
        learner = self.learner
        entry = Opponent(
            self.next_id, f"snapshot@{segment}", "snapshot", model=model, segment=segment,
            mu=learner.mu, sigma=learner.sigma,
        )  # fmt: skip
        self.entries[entry.id] = entry
        self.next_id += 1
        active = [
            each for each in self.entries.values() if each.kind == "snapshot" and not each.retired
        ]
        for old in active[: max(0, len(active) - self.pool_size)]:
            old.retired = True
        return entry

    def drop_unused(self, playing: set[int]) -> None:
        """Forget retired snapshots no world plays any more."""
        for id_ in [
            id_ for id_, each in self.entries.items() if each.retired and id_ not in playing
        ]:
            del self.entries[id_]

    def candidates(self) -> list[Opponent]:
        """The entries other than the learner a game may draw."""
        return [
            each for each in self.entries.values() if each.kind != "latest" and not each.retired
        ]

    def draw(self, rng: np.random.Generator) -> int:
        """A new game's opponent id: :data:`LIVE` with probability ``latest_share`` (or
        while no other entry is in play), else :meth:`draw_other`'s."""
        return self.draw_table().draw(rng)

    def draw_other(self, rng: np.random.Generator) -> int:
        """An entry other than the learner, uniformly or by PFSP (there must be one)."""
        return self.draw_table().draw_other(rng)

    def draw_table(self) -> DrawTable:
        """How a game's opponent is drawn now (the entries' weights as their results stand),
        frozen: what a sampler elsewhere draws with until it is given the next."""
        others = self.candidates()
        if self.sampling == "uniform":
            weights = np.ones(len(others))
        else:  # pfsp, on win rates with one win and one loss assumed (Laplace's rule), so
            # an entry beaten in its first game is not dropped for good
            rates = np.array([each.smoothed_win_rate() for each in others])
            weights = (1.0 - rates) ** self.pfsp_power
        return DrawTable(
            self.latest_share,
            tuple(each.id for each in others),
            tuple((weights / weights.sum()).tolist()) if len(others) else (),
        )

    def record(self, id_: int, outcome: str, rate: Any) -> None:
        """One game's ``outcome`` for the learner against entry ``id_``; ``rate`` is the
        rating model (an ``openskill`` model), used unless the learner played itself."""
        entry = self.entries[id_]
        entry.results[outcome] += 1
        entry.segment_results[outcome] += 1
        if id_ == LIVE:
            return
        learner = self.learner
        ranks = {"win": [0, 1], "draw": [0, 0], "loss": [1, 0]}[outcome]
        mine = rate.rating(mu=learner.mu, sigma=learner.sigma)
        theirs = rate.rating(mu=entry.mu, sigma=entry.sigma)
        [[mine], [theirs]] = rate.rate([[mine], [theirs]], ranks=ranks)
        learner.mu, learner.sigma = mine.mu, mine.sigma
        entry.mu, entry.sigma = theirs.mu, theirs.sigma

    def start_segment(self) -> None:
        """Begin the segment's counts."""
        for entry in self.entries.values():
            entry.segment_results = dict.fromkeys(OUTCOMES, 0)

    def table(self) -> list[dict[str, Any]]:
        """The tournament table: one row per entry (the learner first), its games against
        the learner this segment and over the run, the learner's win rate, the rating."""
        rows = []
        for entry in self.entries.values():
            rows.append(
                {
                    "opponent": entry.name,
                    "kind": entry.kind,
                    "games": sum(entry.segment_results.values()),
                    **{PLURALS[outcome]: entry.segment_results[outcome] for outcome in OUTCOMES},
                    "win_rate": entry.win_rate(entry.segment_results),
                    "games_total": entry.games,
                    "win_rate_total": entry.win_rate(),
                    "mu": entry.mu,
                    "sigma": entry.sigma,
                    "ordinal": entry.mu - 3 * entry.sigma,
                    "retired": entry.retired,
                }
            )
        return rows

    def report(self) -> dict[str, float]:
        """The running segment's (or generation's) ``selfplay/...`` metrics: the learner's
        rating, its games, its score rate against the other entries (draws half) and
        against each bot and member, and the snapshots in play."""
        learner = self.learner
        against = [each for each in self.entries.values() if each.id != LIVE]
        played = {key: sum(each.segment_results[key] for each in against) for key in OUTCOMES}
        games = sum(played.values())
        stats = {
            "selfplay/rating": learner.mu,
            "selfplay/rating_sigma": learner.sigma,
            "selfplay/rating_ordinal": learner.mu - 3 * learner.sigma,
            "selfplay/games": float(games + sum(learner.segment_results.values())),
            "selfplay/win_rate": (played["win"] + 0.5 * played["draw"]) / games
            if games
            else math.nan,
            "selfplay/snapshots": float(
                len([e for e in against if e.kind == "snapshot" and not e.retired])
            ),
        }
        for each in against:
            if each.kind in ("bot", "member"):
                stats[f"selfplay/win_rate/{each.name}"] = each.win_rate(each.segment_results)
        return stats

    def state_dict(self, model_state) -> dict[str, Any]:
        """Everything but the bots' functions (loaded again by name) and the running
        segment's counts (a checkpoint is taken between segments); ``model_state`` turns a
        snapshot's model into its tensors."""
        return {
            "next_id": self.next_id,
            "entries": [
                {
                    "id": each.id, "name": each.name, "kind": each.kind,
                    "bot_target": each.bot_target, "member": each.member,
                    "segment": each.segment,
                    "retired": each.retired, "results": dict(each.results),
                    "mu": each.mu, "sigma": each.sigma,
                    "model": None if each.model is None else model_state(each.model),
                }
                for each in self.entries.values()
            ],
        }  # fmt: skip

    def load_state_dict(self, state: dict[str, Any], make_model, load_bot) -> None:
        """Restore :meth:`state_dict`; ``make_model(tensors)`` rebuilds a snapshot,
        ``load_bot(target)`` a bot."""
        self.next_id = int(state["next_id"])
        self.entries = {}
        for saved in state["entries"]:
            entry = Opponent(
                int(saved["id"]), saved["name"], saved["kind"], bot_target=saved["bot_target"],
                member=int(saved["member"]), segment=int(saved["segment"]),
                retired=bool(saved["retired"]),
                results=dict(saved["results"]), mu=float(saved["mu"]), sigma=float(saved["sigma"]),
            )  # fmt: skip
            if saved["model"] is not None:
                entry.model = make_model(saved["model"])
            if entry.kind == "bot":
                entry.bot = load_bot(entry.bot_target)
            self.entries[entry.id] = entry


def pool_for(config: SelfPlayConfig, snapshot_bytes: int, snapshots: str) -> OpponentPool:
    """The pool ``config`` asks for, refused in one line naming ``selfplay.pool_size``
    before anything is built where its snapshots (``snapshot_bytes`` each; ``snapshots``
    says what they are, for the message) would not fit in the memory available."""
    refuse_unless_it_fits(
        "selfplay.pool_size",
        config.pool_size * snapshot_bytes,
        f"{config.pool_size} {snapshots}",
        lambda room: f"selfplay.pool_size <= {room // max(snapshot_bytes, 1)}",
    )
    return OpponentPool(config.pool_size, config.latest_share, config.sampling, config.pfsp_power)
