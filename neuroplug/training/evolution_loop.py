"""An evolutionary algorithm's generation: ask, evaluate, tell — one or more rounds."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from neuroplug.api import EvaluationRequest, EvaluationResult
from neuroplug.errors import NeuroplugError, PluginError
from neuroplug.evolution.coevolution import Arena
from neuroplug.evolution.policy_arena import PolicyArena
from neuroplug.evolution.policy_populations import PolicyPopulations
from neuroplug.evolution.rounds import generation_ended, round_marker
from neuroplug.loggers import MultiLogger
from neuroplug.training.checkpoint import checkpoint_dir
from neuroplug.training.components import Components
from neuroplug.training.loop import FamilyLoop, Progress, RunTables, Step
from neuroplug.training.stall import StallWatch


class EvolutionLoop(FamilyLoop):
    """Generations of an :class:`~neuroplug.api.Algorithm`, played by the run's scheduler."""

    unit = "generation"

    def __init__(self, parts: Components, loggers: MultiLogger, run_dir: Path) -> None:
        self.parts = parts
        self.loggers = loggers
        self.run_dir = run_dir
        self.stall = StallWatch(parts.algorithm.config)
        # A multi-agent env's episodes are games (neuroplug.evolution.coevolution).
        selfplay = parts.config.selfplay
        games = selfplay if selfplay.enabled else None
        self.arena: Arena | PolicyArena | None = None
        if isinstance(parts.algorithm, PolicyPopulations):  # a population per policy
            self.arena = PolicyArena(
                games,
                parts.env,
                parts.run.seed,
                parts.network.num_params,
                lambda: parts.algorithm.member_policies,
            )
        elif parts.env.agents:
            self.arena = Arena(games, parts.env, parts.run.seed, parts.network.num_params)
        self.tables = RunTables(run_dir, self.unit)
        self.started_at: int | None = None
        """The generation this process started from (a resumed run's checkpoint)."""

    @property
    def completed(self) -> int:
        return self.parts.algorithm.generation

    def describe(self) -> str:
        algorithm = self.parts.algorithm
        # An algorithm that sizes its population itself (CMA-ES from the dimension, IPOP's
        # growth) says so in its population_size.
        size = getattr(algorithm, "population_size", algorithm.config.population_size)
        plan = self.parts.backend.plan(size)
        words = f"population {size}" + (f" ({plan})" if plan else "")
        if isinstance(algorithm, PolicyPopulations):  # it names its policies
            return f"{words}: {algorithm.describe()}"
        return words

    def step(self, progress: Progress) -> Step:
        """All rounds of one generation; its games are the main round's."""
        parts = self.parts
        generation = parts.algorithm.generation
        if self.started_at is None:
            self.started_at = generation
        if self.arena is not None:
            self.arena.start_generation()
        self._timings = dict.fromkeys(("env", "inference", "algorithm"), 0.0)
        self._scheduler_stats: dict[str, float] = {}
        self._counters = dict.fromkeys(("env_steps", "frames", "forward_passes"), 0)
        stats: dict[str, float] = {}
        main_result: EvaluationResult | None = None
        round_index = 0
        ended = False
        while not ended:
            if round_index == parts.algorithm.max_rounds_per_generation:
                raise PluginError(
                    f"{type(parts.algorithm).__name__} asked for more than "
                    f"{round_index} rounds in generation {generation + 1} "
                    "(its max_rounds_per_generation); each tell() must eventually end the "
                    "generation instead of calling continue_generation()"
                )
            result, round_stats, ended = self.evaluate_round(round_index, progress)
            if main_result is None:
                main_result = result
                if parts.policy.normalizer is not None and result.obs_stats is not None:
                    # Updated after tell, so every member of a generation saw the same statistics.
                    parts.policy.normalizer.update(result.obs_stats)
            stats.update(round_stats)
            round_index += 1
        stalled = self.stall.observe(
            parts.algorithm.generation,
            main_result.fitness,
            stats,
            by_behavior=parts.algorithm.behavior() is not None,
        )
        if stalled:
            self.loggers.message(stalled)
        if self.arena is not None:
            arena_stats, rows = self.arena.end_generation(generation, parts.algorithm.policy_params)
            stats.update(arena_stats)
            self.tables.write({"tournament": rows}, self.started_at)
        return Step(
            **self._counters,
            returns=main_result.returns.ravel(),
            lengths=main_result.lengths,
            stats=stats,
            timings=self._timings,
            metrics={
                **{f"scheduler/{k}": v for k, v in self._scheduler_stats.items()},
                "evaluation_rounds": round_index,
            },
        )

    def evaluate_round(
        self, round_index: int, progress: Progress
    ) -> tuple[EvaluationResult, dict[str, float], bool]:
        """One ask/evaluate/tell round of the current generation; counts its work.

        Returns the result, the algorithm's stats and whether the round ended the generation.
        """
        parts = self.parts
        started = time.perf_counter()
        with parts.threads.fixed():  # the algorithm's math: the same bits at any load
            population = parts.algorithm.ask()
        generation = parts.algorithm.generation
        frame_skip = parts.env.frame_skip

        def report(episodes_done: int, episodes_total: int, env_steps: int) -> None:
            progress(
                {
                    "phase": "generation",
                    "generation": generation + 1,
                    "episodes_done": episodes_done,
                    "episodes_total": episodes_total,
                    "frames": self._counters["frames"] + env_steps * frame_skip,
                }
            )

        request = EvaluationRequest(
            generation=generation,
            episodes_per_member=parts.algorithm.episodes_per_member(),
            seed=parts.run.seed,
            action_noise=parts.algorithm.action_noise(),
            action_temperature=parts.algorithm.action_temperature(),
            # Only the main round's observations update the normalizer.
            collect_obs_stats=parts.policy.normalizer is not None and round_index == 0,
            round=round_index,
            behavior=parts.algorithm.behavior(),
            transitions=parts.algorithm.wants_transitions(),
            progress=report,
        )
        evaluating = time.perf_counter()
        result = self._evaluate_with_retries(population, request)
        telling = time.perf_counter()
        nonfinite = int((~np.isfinite(result.fitness)).sum())
        if nonfinite:
            self.loggers.message(
                f"warning: generation {generation + 1}: {nonfinite} member(s) had NaN/inf "
                "returns or outputs; scored as the worst of the population"
            )
        before = round_marker(parts.algorithm)
        with parts.threads.fixed():
            stats = parts.algorithm.tell(population, result)
        ended = generation_ended(parts.algorithm, before)
        self._timings["algorithm"] += (evaluating - started) + (time.perf_counter() - telling)
        for key, value in result.stats.items():
            self._scheduler_stats[key] = self._scheduler_stats.get(key, 0.0) + value
        for phase, seconds in result.timings.items():
            if phase != "wall":  # the generation's own clock covers it
                self._timings[phase] = self._timings.get(phase, 0.0) + seconds
        for name in self._counters:
            self._counters[name] += getattr(result, name)
        return result, stats, ended

    def _evaluate_with_retries(self, population, request: EvaluationRequest) -> EvaluationResult:
        """Evaluate, retrying a failed evaluation (a crashed simulator, say) ``run.retries`` times.

        Episodes are seeded by (seed, generation, round, episode), so a retry plays exactly
        the episodes the failed attempt would have; the population is not asked anew. In a
        multi-agent env the games are drawn once, before the first attempt.
        """
        parts = self.parts
        staged = None
        if self.arena is not None:
            staged = self.arena.stage(population, request)
            population, request = staged.population, staged.request
        for attempt in range(parts.run.retries + 1):
            try:
                result = parts.scheduler.evaluate(population, parts.policy, parts.backend, request)
                return result if staged is None else self.arena.fold(staged, result)
            except (KeyboardInterrupt, NeuroplugError):
                raise
            except Exception as error:
                if attempt == parts.run.retries:
                    raise RuntimeError(
                        f"evaluating generation {request.generation + 1} failed "
                        f"{attempt + 1} time(s) ({type(error).__name__}: {error}); the checkpoint "
                        f"of generation {request.generation} in {checkpoint_dir(self.run_dir)} is "
                        f"intact: continue with run.resume={self.run_dir}"
                    ) from error
                self.loggers.message(
                    f"warning: evaluating generation {request.generation + 1} failed "
                    f"({type(error).__name__}: {error}); retrying ({attempt + 1}/{parts.run.retries})"
                )
        raise AssertionError("unreachable")

    def state_dict(self) -> dict:
        """The games' opponents: a multi-agent run's hall of fame."""
        return {} if self.arena is None else {"arena": self.arena.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`."""
        if self.arena is not None and state.get("arena"):
            self.arena.load_state_dict(state["arena"])
