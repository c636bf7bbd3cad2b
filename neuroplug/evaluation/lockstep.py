"""Lockstep lanes: the episode engine shared by the built-in schedulers.

An evaluation plays ``P x E`` episodes (*work items*, see :mod:`neuroplug.evaluation.episodes`) in
``L = min(max_envs, P x E)`` EnvPool slots called *lanes*. Lanes are split into ``K``
groups of consecutive lanes, one EnvPool per group, stepped with
``send``/``recv`` and only for the lanes that have work, so the envs of finished
episodes are never stepped. Time goes in *cycles*: in each cycle every busy group
receives one step, runs the forward pass of its alive members, and sends their actions.

- ``K = 1`` gives the serial and threaded schedules: step, then infer, in turn.
- ``K >= 2`` gives the pipelined schedule: while group ``g`` is in the backend, the other
  groups' envs are stepping in EnvPool's C++ threads (which do not hold the GIL), and on
  CUDA each group's forward runs in its own stream.

When an episode ends its lane resets (EnvPool's auto-reset, on the lane's next step) and
takes the next pending work item, so lanes stay full until the work runs out. Lanes that
finished in cycle ``t`` take items at the start of cycle ``t + 1`` in lane order. That
order depends only on episode lengths, never on timing or on ``K``, and a lane's env is
seeded once (by its first item's episode seed, see :func:`lane_seeds`), so every
schedule built on this engine plays exactly the same episodes with exactly the same
members: returns, lengths, behaviors and observation sums agree bit for bit for the
same ``max_envs``. Continuous-action noise is drawn from a counter-based generator keyed
by (episode, step), so it does not depend on the order of steps either.

The learners' sampler (:mod:`neuroplug.rl.sampler`) drives EnvPool groups too, but
not with this engine: it steps every env at every step for a whole run and stores raw
arrays in fixed rollouts, where this engine steps only live lanes, assigns episodes, and
reads the info dict behaviors need; its docstring says why one driver would not serve
both. Their shared rules (pools, thread split, seeds, a family's true score) live once
below both.

An :class:`EpisodeObserver` may watch the episodes as they are played (watch records
its video this way, so it shows exactly the episodes that were evaluated); it also makes
the groups' pools, so it can ask EnvPool for rendering. Without one the engine does no
extra work.
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np
import torch

from neuroplug.api import (
    Backend,
    EvaluationRequest,
    EvaluationResult,
    Scheduler,
)
from neuroplug.envs.make import engine_pool_settings, make_pool
from neuroplug.envs.spec import EnvSpec
from neuroplug.evaluation.behaviors import resolve
from neuroplug.evaluation.config import LockstepSchedulerConfig
from neuroplug.evaluation.episodes import EpisodeLedger
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.population.noise import gumbels_at, normals_at
from neuroplug.runtime.devices import available_env_threads
from neuroplug.runtime.seeds import action_noise_keys, episode_seeds, start_noop_counts

NO_ITEM = -1
PROGRESS_INTERVAL_S = 0.25
"""Least seconds between two calls of ``request.progress``."""


def lane_seeds(request: EvaluationRequest, ledger: EpisodeLedger, lanes: int) -> np.ndarray:
    """The env seed of each lane: the episode seed of the first item it plays.

    When every episode fits in a lane, each episode is seeded by (run seed, generation,
    round, episode index) exactly, and every member's k-th episode starts from the same
    conditions (common random numbers).
    """
    first_items = np.arange(lanes)
    return episode_seeds(
        request.seed, request.generation, ledger.episode[first_items], request.round
    )


class _FlightClock:
    """How long the simulators worked unseen and how long they sat idle.

    ``env_idle``: time in which no group had a step in flight (the envs waited for the
    main thread); ``overlap``: forward-pass time during which some other group's envs
    were stepping (the work pipelining hides).
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self.idle = 0.0
        self._since = time.perf_counter()

    def sent(self) -> None:
        now = time.perf_counter()
        if self.in_flight == 0:
            self.idle += now - self._since
        self.in_flight += 1

    def received(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._since = time.perf_counter()

    def idle_until(self, now: float) -> float:
        """Idle seconds so far, counting an idle stretch still open at ``now``."""
        return self.idle + (now - self._since if self.in_flight == 0 else 0.0)


class EpisodeObserver:
    """Watches the episodes of a :class:`LockstepEvaluation` while they are played.

    The engine calls :meth:`make_pool` once per group of lanes and :meth:`observe` once per
    step it receives, before it sends the next actions, so the pool's envs still show the
    observed states (EnvPool can render them). Override what you need.
    """

    def make_pool(self, env: EnvSpec, seeds: np.ndarray, num_threads: int, **overrides):
        """The EnvPool of one group of lanes, one env per seed (default: the engine's own);
        ``overrides`` are ``envpool.make`` settings the engine needs (see
        :func:`neuroplug.envs.make.engine_pool_settings`)."""
        return make_pool(env, seeds, num_threads, **overrides)

    def observe(
        self,
        pool,
        items: np.ndarray,
        env_ids: np.ndarray,
        observations: np.ndarray,
        started: np.ndarray,
        ended: np.ndarray,
    ) -> None:
        """One received step of ``pool``, with a row per env that plays an episode.

        Row ``i``: env ``env_ids[i]`` of ``pool`` plays work item ``items[i]`` (see
        :mod:`neuroplug.evaluation.episodes`) and shows ``observations[i]``: the episode's first
        observation, after its reset, where ``started[i]``; else the one after its next
        step, the episode's last where ``ended[i]``.
        """


class PoolCache:
    """EnvPools kept from one evaluation to the next, by lane layout.

    Only for envs with ``reusable_pools`` (Atari without sticky actions): every episode
    there starts from a full reset plus its own seeded no-ops, so a pool's history never
    shows in an episode, and building Atari envs (slow: an emulator each) happens once per run
    instead of once per generation. A scheduler holds one and closes it at the end.
    """

    def __init__(self) -> None:
        self._pools: dict[tuple, list] = {}

    def take(self, key: tuple) -> list | None:
        """The pools kept under ``key`` (now the caller's), or None."""
        return self._pools.pop(key, None)

    def keep(self, key: tuple, pools: list) -> None:
        """Keep ``pools`` for the next evaluation with the same layout."""
        for pool in self._pools.pop(key, []):
            pool.close()
        self._pools[key] = pools

    def close(self) -> None:
        """Close every kept pool."""
        for pools in self._pools.values():
            for pool in pools:
                pool.close()
        self._pools.clear()


class _Group:
    """One EnvPool holding the lanes ``lanes`` (its env ``i`` is lane ``lanes[i]``)."""

    def __init__(self, lanes: np.ndarray, pool, stream) -> None:
        self.lanes = lanes
        self.pool = pool
        self.stream = stream
        self.in_flight = False


class LockstepEvaluation:
    """One evaluation played on lockstep lanes (build it, then :meth:`run` it once)."""

    def __init__(
        self,
        env: EnvSpec,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
        max_envs: int | None,
        groups: int,
        env_threads: int,
        observer: EpisodeObserver | None = None,
        first_member: int = 0,
        pool_cache: PoolCache | None = None,
    ) -> None:
        """``max_envs``: the most lanes (None: the env family's ``engine_lanes``).
        ``first_member``: when ``population`` is a run of consecutive members of a larger
        one (a shard, see ``neuroplug_ray``), the index of its first member there, so its
        episodes draw the same action noise as they would in the whole population.
        ``pool_cache``: where pools of envs with ``reusable_pools`` are kept between
        evaluations (none: every evaluation builds its own)."""
        # Resolved before any pool starts, so a BC that does not fit the env fails first.
        behavior = resolve(request.behavior, env) if request.behavior is not None else None
        self.env = env
        self.policy = policy
        self.backend = backend
        self.request = request
        self.ledger = EpisodeLedger(len(population), request, env.frame_skip, behavior)
        self.population = population
        self.observer = observer
        self.num_lanes = min(max_envs or env.family.engine_lanes, len(self.ledger))
        # A multi-agent world fills as many lanes as it has agents, all stepped at once
        # and ending together: lanes, groups and episodes come in whole worlds.
        self.world = env.lanes_per_env
        if len(self.ledger) % self.world:
            raise ValueError(
                f"{len(self.ledger)} episodes are not whole worlds of {self.world} agents"
            )
        self.num_lanes = max(self.world, self.num_lanes - self.num_lanes % self.world)
        self.num_groups = max(1, min(groups, self.num_lanes // self.world))
        # The threads are shared out between the groups' pools: one pool per core-share
        # keeps the envs from fighting each other (and the backend) for the same cores.
        total_threads = available_env_threads(env_threads)
        self.threads_per_pool = max(1, total_threads // self.num_groups)
        self.lane_item = np.full(self.num_lanes, NO_ITEM, dtype=np.int64)
        self.resetting = np.zeros(self.num_lanes, dtype=bool)
        # No-op starts (Atari): each item's count, and what is left of its lane's.
        self.item_noops = start_noop_counts(
            request.seed, request.generation, self.ledger.episode, request.round, env.start_noops
        )
        self.noops_left = np.zeros(self.num_lanes, dtype=np.int64)
        # A recurrent core's state, per lane: zeroed when the lane takes a new episode and
        # carried from step to step of it (on the backend's device).
        size = policy.network.state_size
        self.lane_state = (
            torch.zeros((self.num_lanes, size), device=backend.device) if size else None
        )
        self.pool_cache = pool_cache if observer is None and env.reusable_pools else None
        self.next_item = 0
        self.noise_keys = (
            action_noise_keys(
                request.seed,
                request.generation,
                request.round,
                len(self.ledger),
                first_member * request.episodes_per_member,
            )
            if request.action_noise or request.action_temperature
            else None
        )
        # Where the family keeps the true score (Atari: info["reward"], unclipped points).
        self.score_key = env.family.score_info_key
        self.clock = _FlightClock()
        self.overlap = 0.0
        # Transitions (request.transitions): each lane's last observation and action sent.
        self.last_observations: np.ndarray | None = None
        self.last_actions: np.ndarray | None = None

    # ------------------------------------------------------------------ the schedule

    def run(self) -> EvaluationResult:
        """Play every work item; return the ledger's result with the phase timings."""
        return self.play().result()

    def play(self) -> EpisodeLedger:
        """Play every work item; return the ledger (with the phase timings)."""
        started = time.perf_counter()
        ledger = self.ledger
        if len(ledger) == 0:
            return ledger
        self.backend.load(self.population)
        with ledger.timing("env_setup"):
            groups = self._start_groups()
        loop_started = time.perf_counter()
        self.clock = _FlightClock()
        finished: list[int] = []
        played = False
        try:
            # Cycle 0: every lane takes an item and resets (a fresh env's first step; a
            # kept pool is told to reset every env).
            self._assign(np.arange(self.num_lanes))
            self.resetting[:] = True
            for group in groups:
                if self.pool_cache is not None:
                    with ledger.timing("env"):
                        group.pool.async_reset()
                        group.in_flight = True
                        self.clock.sent()
                else:
                    self._send(group, group.lanes, self._dummy_actions(len(group.lanes)))
            reported = time.perf_counter()
            while any(group.in_flight for group in groups):
                self._assign(np.sort(np.asarray(finished, dtype=np.int64)))
                finished = []
                for group in groups:
                    if group.in_flight:
                        finished += self._cycle(group, groups)
                if self.request.progress is not None:
                    now = time.perf_counter()
                    if now - reported >= PROGRESS_INTERVAL_S:
                        reported = now
                        self._report_progress()
            played = True
        finally:
            pools = [group.pool for group in groups]
            if self.pool_cache is not None and played:
                self.pool_cache.keep(self._layout(), pools)
            else:  # a failed evaluation's pools may be in any state: never reuse them
                for pool in pools:
                    pool.close()
        if self.request.progress is not None:
            self._report_progress()
        ended = time.perf_counter()
        timings = ledger.timings
        timings["env_idle"] = self.clock.idle_until(ended)
        timings["overlap"] = self.overlap
        timings["bookkeeping"] = max(
            0.0, (ended - loop_started) - timings["env"] - timings["inference"]
        )
        timings["wall"] = ended - started
        return ledger

    def _report_progress(self) -> None:
        ledger = self.ledger
        self.request.progress(ledger.episodes_done, len(ledger), ledger.env_steps)

    def _layout(self) -> tuple:
        """What a kept pool must match to serve this evaluation."""
        sizes = tuple(len(lanes) for lanes in self._lane_groups())
        return (self.env.task_id, sizes, self.threads_per_pool)

    def _lane_groups(self) -> list[np.ndarray]:
        # Consecutive lanes per group: lanes start on consecutive members, so a group's
        # members are a run whose weights a backend can use in place.
        worlds = np.array_split(np.arange(self.num_lanes // self.world), self.num_groups)
        return [run[0] * self.world + np.arange(len(run) * self.world) for run in worlds]

    def _start_groups(self) -> list[_Group]:
        seeds = lane_seeds(self.request, self.ledger, self.num_lanes)
        on_cuda = self.backend.device.type == "cuda"
        make = self.observer.make_pool if self.observer is not None else make_pool
        kept = self.pool_cache.take(self._layout()) if self.pool_cache is not None else None
        settings = engine_pool_settings(self.env)
        groups: list[_Group] = []
        try:
            for index, lanes in enumerate(self._lane_groups()):
                if kept is not None:
                    pool = kept[index]
                else:
                    pool = make(self.env, seeds[lanes], self.threads_per_pool, **settings)
                stream = None
                if on_cuda:
                    stream = torch.cuda.Stream(self.backend.device)
                    # The backend's load() ran on the default stream; don't read its weights early.
                    stream.wait_stream(torch.cuda.current_stream(self.backend.device))
                groups.append(_Group(lanes, pool, stream))
        except BaseException:
            # The pools built (or taken from the cache) so far belong to nobody else.
            for pool in kept if kept is not None else [group.pool for group in groups]:
                pool.close()
            raise
        return groups

    def _assign(self, lanes: np.ndarray) -> None:
        """Give the next pending items to ``lanes`` (in the order given); the rest idle."""
        count = min(len(lanes), len(self.ledger) - self.next_item)
        items = np.arange(self.next_item, self.next_item + count)
        self.lane_item[lanes[:count]] = items
        self.lane_item[lanes[count:]] = NO_ITEM
        self.noops_left[lanes[:count]] = self.item_noops[items]
        if self.lane_state is not None and count:
            self.lane_state[torch.from_numpy(lanes[:count]).to(self.lane_state.device)] = 0.0
        self.next_item += count

    def _cycle(self, group: _Group, groups: list[_Group]) -> list[int]:
        """Receive ``group``'s step, book it, infer its alive members and send their actions.

        Returns the lanes whose episodes ended in this step.
        """
        ledger = self.ledger
        with ledger.timing("env"):
            observations, reward, terminated, truncated, info = group.pool.recv()
            group.in_flight = False
            self.clock.received()
        lanes = group.lanes[info["env_id"]]
        was_reset = self.resetting[lanes]
        self.resetting[lanes] = False
        stepped = np.flatnonzero(~was_reset)
        items = self.lane_item[lanes[stepped]]
        rewards = (info[self.score_key] if self.score_key else reward)[stepped]
        if ledger.wants_transitions and len(stepped):
            self._record_transitions(
                lanes[stepped], items, observations, reward, terminated, stepped
            )
        ledger.record_step(items, rewards)
        done = (terminated | truncated)[stepped]
        ended_rows = stepped[done]
        ledger.record_ends(items[done], observations, info, ended_rows)
        ended_lanes = lanes[ended_rows]
        if self.observer is not None:
            self._observe(group, lanes, info["env_id"], observations, was_reset, ended_rows)
        self.lane_item[ended_lanes] = NO_ITEM

        rows = np.flatnonzero(self.lane_item[lanes] != NO_ITEM)  # alive, incl. just reset
        starting = self.noops_left[lanes[rows]] > 0
        if starting.any():
            # Episodes still in their no-op start step with action 0 (NOOP on Atari),
            # without the policy; the rest infer as usual.
            actions = self._dummy_actions(len(rows))
            acting = rows[~starting]
            if len(acting):
                items = self.lane_item[lanes[acting]]
                actions[~starting] = self._infer(
                    group, groups, items, lanes[acting], observations[acting]
                )
            self.noops_left[lanes[rows[starting]]] -= 1
        else:
            actions = self._infer(
                group, groups, self.lane_item[lanes[rows]], lanes[rows], observations[rows]
            )
        if ledger.wants_transitions and len(rows):
            self._remember(lanes[rows], observations[rows], actions[: len(rows)])
        # Ended lanes reset on their next step, if any work may be left for them.
        resets = ended_lanes if self.next_item < len(ledger) else ended_lanes[:0]
        self.resetting[resets] = True
        step_lanes = np.concatenate((lanes[rows], resets))
        if len(step_lanes):
            actions = np.concatenate((actions, self._dummy_actions(len(resets))))
            self._send(group, step_lanes, actions)
        return ended_lanes.tolist()

    def _record_transitions(
        self,
        lanes: np.ndarray,
        items: np.ndarray,
        observations: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        rows: np.ndarray,
    ) -> None:
        """The step each of ``lanes`` just took: from the observation its action was chosen
        on to what came back (an episode's last observation where it ended: EnvPool resets
        on the step after)."""
        self.ledger.record_transitions(
            items,
            self.last_observations[lanes],
            self.last_actions[lanes],
            reward[rows],
            observations[rows],
            terminated[rows],
        )

    def _remember(self, lanes: np.ndarray, observations: np.ndarray, actions: np.ndarray) -> None:
        """What ``lanes`` act on and send now: the start of their next transitions."""
        if self.last_observations is None:
            self.last_observations = np.zeros(
                (self.num_lanes, *observations.shape[1:]), observations.dtype
            )
            self.last_actions = np.zeros((self.num_lanes, *actions.shape[1:]), actions.dtype)
        self.last_observations[lanes] = observations
        self.last_actions[lanes] = actions

    def _observe(
        self,
        group: _Group,
        lanes: np.ndarray,
        env_ids: np.ndarray,
        observations: np.ndarray,
        was_reset: np.ndarray,
        ended_rows: np.ndarray,
    ) -> None:
        """Show the observer the rows of this step that belong to an episode."""
        items = self.lane_item[lanes]
        # Leaves out the spare resets of lanes that found no work left.
        rows = np.flatnonzero(items != NO_ITEM)
        ended = np.zeros(len(lanes), dtype=bool)
        ended[ended_rows] = True
        self.observer.observe(
            group.pool, items[rows], env_ids[rows], observations[rows], was_reset[rows], ended[rows]
        )

    def _infer(
        self,
        group: _Group,
        groups: list[_Group],
        items: np.ndarray,
        lanes: np.ndarray,
        observations: np.ndarray,
    ) -> np.ndarray:
        """Actions of work items ``items`` (played on ``lanes``) for their observations (one
        forward pass; a recurrent core goes on from each lane's state)."""
        if len(items) == 0:
            return self._dummy_actions(0)
        ledger = self.ledger
        others_stepping = any(other.in_flight for other in groups if other is not group)
        started = time.perf_counter()
        with ledger.timing("inference"):
            ledger.record_inference(items, observations)
            context = torch.cuda.stream(group.stream) if group.stream is not None else nullcontext()
            with context:
                inputs = self.policy.prepare(observations, self.backend.device)
                members = torch.from_numpy(ledger.member[items])
                if self.lane_state is None:
                    outputs = self.backend.forward(members, inputs)
                else:
                    rows = torch.from_numpy(lanes).to(self.lane_state.device)
                    outputs, state = self.backend.forward_with_state(
                        members, inputs, self.lane_state[rows]
                    )
                    self.lane_state[rows] = state
                actions, invalid = self.policy.act(outputs, self._action_noise(items))
            if invalid.any():
                ledger.record_invalid(items[invalid])
        if others_stepping:
            self.overlap += time.perf_counter() - started
        return actions

    def _action_noise(self, items: np.ndarray) -> np.ndarray | None:
        """Each item's current step's noise, a function of (episode, step): Gaussian on
        continuous actions, Gumbel times the temperature on discrete ones (added to the
        outputs before the argmax: a draw from their softmax at that temperature)."""
        if self.noise_keys is None:
            return None
        scale = self.request.action_temperature if self.env.discrete else self.request.action_noise
        if not scale:
            return None
        size = self.env.num_actions
        blocks = (size + 3) // 4
        steps = torch.from_numpy(self.ledger.lengths[items])
        counters = steps.unsqueeze(1) * blocks + torch.arange(blocks)
        keys = self.noise_keys[torch.from_numpy(items)].unsqueeze(1)
        draw = gumbels_at if self.env.discrete else normals_at
        return scale * draw(keys, counters).reshape(len(items), -1)[:, :size].numpy()

    def _send(self, group: _Group, lanes: np.ndarray, actions: np.ndarray) -> None:
        local = (lanes - group.lanes[0]).astype(np.int32)  # a group is a run of lanes
        with self.ledger.timing("env"):
            group.pool.send(actions, local)
            group.in_flight = True
            self.clock.sent()

    def _dummy_actions(self, count: int) -> np.ndarray:
        if self.env.discrete:
            return np.zeros(count, dtype=np.int32)
        return np.zeros((count, self.env.num_actions), dtype=np.float32)


class LockstepScheduler(Scheduler):
    """A scheduler that plays its evaluations on lockstep lanes in :meth:`groups` groups."""

    config_class = LockstepSchedulerConfig

    def __init__(self, config: LockstepSchedulerConfig, env: EnvSpec) -> None:
        super().__init__(config, env)
        self.pool_cache = PoolCache()

    def close(self) -> None:
        """Close the pools kept between evaluations."""
        self.pool_cache.close()

    def groups(self, backend: Backend) -> int:
        """Groups of lanes in flight for an evaluation on ``backend`` (1: step all, then
        infer all)."""
        return 1

    def evaluate(
        self,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
    ) -> EvaluationResult:
        evaluation = LockstepEvaluation(
            self.env,
            population,
            policy,
            backend,
            request,
            max_envs=self.config.max_envs,
            groups=self.groups(backend),
            env_threads=self.config.env_threads,
            pool_cache=self.pool_cache,
        )
        return evaluation.run()
