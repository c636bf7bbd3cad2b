"""The training loop: a unit of training, evaluate, log, checkpoint — until a budget runs out.

The trainer drives either family through one small interface (:mod:`neuroplug.training.loop`):
an evolutionary algorithm's generation is its ask, evaluate, tell rounds; a learner's
segment is sampling and learning on envs that live for the whole run. Budgets, evaluation
of the deployed policy on full unclipped episodes, checkpoints, Ctrl-C/SIGTERM and loggers
are shared. Everything random is a function of the run seed and the unit's index (the
algorithm's RNG lives in its checkpointed state), so an evolution run resumed from a
checkpoint ends in exactly the state of one that was never interrupted; a learner's envs
start new episodes on resume (:mod:`neuroplug.rl.base`), and ``appo``, asynchronous,
documents what else it cannot reproduce.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from neuroplug.api import EvaluationRequest, EvaluationResult
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.evaluation.completions import sample_completions
from neuroplug.evaluation.deployment import deployed_population
from neuroplug.experiment.typed import Experiment
from neuroplug.loggers import MultiLogger, build_loggers
from neuroplug.runtime.devices import describe_matmul_precision
from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
from neuroplug.runtime.stop_signals import STOP_SIGNALS
from neuroplug.training.checkpoint import (
    BEST_POLICY,
    LATEST,
    atomic_save,
    checkpoint_dir,
    existing_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from neuroplug.training.checkpoint_writer import CheckpointWriter
from neuroplug.training.components import Components, build_components
from neuroplug.training.evolution_loop import EvolutionLoop
from neuroplug.training.learner_loop import LearnerLoop
from neuroplug.training.loop import FamilyLoop, Progress, Step
from neuroplug.training.players import player_of
from neuroplug.training.policy_file import PolicyRecord, describe_env, normalizer_as_tensors
from neuroplug.training.run_lock import RunDirLock

COUNTERS = ("env_steps", "frames", "forward_passes", "episodes")
LOOPS: dict[str, type[FamilyLoop]] = {"algorithms": EvolutionLoop, "learners": LearnerLoop}
"""The loop for each registry kind of ``algo`` plugin."""


class Trainer:
    """Runs one experiment in ``run_dir`` from its typed config."""

    def __init__(
        self,
        config: Experiment,
        run_dir: Path,
        loggers: MultiLogger | None = None,
        env: EnvSpec | None = None,
    ) -> None:
        """``env``: the spec of ``config.env`` where the caller has made it already."""
        self.run_dir = Path(run_dir)
        self.parts: Components = build_components(config, env)
        # With the task's defaults decided (net.vbn): what config.yaml and checkpoints record.
        self.config = config = self.parts.config
        selfplay = config.selfplay
        # Built now, so a bot or a run that cannot play this game is refused before training.
        self._eval_opponent = (
            player_of(selfplay.eval_opponent, self.parts.env) if selfplay.eval_opponent else None
        )
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.elapsed_before = 0.0
        self.last_eval: float | None = None
        self.last_exact = math.nan
        """A text task's last evaluation: the share of its completions exactly right."""
        self.last_eval_seconds = 0.0
        """The last evaluation's wall time."""
        self.eval_extras: dict[str, float] = {}
        """What an evaluation adds beside its return (``eval/win_rate`` against
        ``selfplay.eval_opponent``), logged with the unit it ran after."""
        self._stop = _StopSignals()
        self._checkpoint_seconds = 0.0
        """How long the last checkpoint took to write (run.checkpoint_share)."""
        self._checkpoint_written_at = time.perf_counter()
        self._writer = CheckpointWriter(
            self._write_checkpoint, self._say_checkpoint_size, self._checkpoint_written
        )
        self._size_said = False
        loop_class = LOOPS[self.parts.family]
        self.unit = loop_class.unit
        """What one unit of training is called in messages: a generation, or a segment."""
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            # Before anything is written: a second run on this dir must not touch the first's files.
            self.lock = RunDirLock(self.run_dir).acquire()
        except OSError as error:
            raise _unwritable(self.run_dir, config, error) from None
        try:
            self._refuse_to_overwrite(config)
            # The run dir describes itself, with or without Hydra's .hydra/ record.
            try:
                (self.run_dir / "config.yaml").write_text(config.to_yaml())
            except OSError as error:
                raise _unwritable(self.run_dir, config, error) from None
            budget = {
                "max_units": self.parts.run.unit_budget,
                "max_frames": self.parts.run.max_frames,
            }
            self.loggers = loggers or build_loggers(
                config.logger, self.run_dir, budget, config, self.unit
            )
            self.loop: FamilyLoop = loop_class(self.parts, self.loggers, self.run_dir)
        except BaseException:
            self.lock.release()
            raise

    def _refuse_to_overwrite(self, config: Experiment) -> None:
        """A fresh run must not overwrite another run's checkpoints: that work would be lost."""
        if config.run.resume:
            return
        existing = existing_checkpoints(self.run_dir)
        if existing:
            raise ConfigError(
                "run.output_dir",
                f"{self.run_dir} already holds a run's checkpoint ({existing[0].name})",
                f"run.resume={self.run_dir} to continue it, or another run.output_dir",
            )

    # ------------------------------------------------------------------ state

    @property
    def completed(self) -> int:
        """Units completed: an algorithm's generations, a learner's segments."""
        return self.loop.completed

    def state(self) -> dict[str, Any]:
        """Everything a checkpoint holds."""
        normalizer = self.parts.policy.normalizer
        return {
            "config": self.config.to_yaml(),
            self.unit: self.completed,
            "counters": dict(self.counters),
            "elapsed": self.elapsed_before + (time.perf_counter() - self._started),
            "last_eval": self.last_eval,
            "algorithm": self.parts.algorithm.state_dict(),
            "loop": self.loop.state_dict(),
            "normalizer": normalizer.state_dict() if normalizer else None,
            "reference_batch": self.parts.network.reference_batch,
            # Deployables, for best_policy.pt only: latest.pt rebuilds them from the
            # algorithm state (for the GA that keeps a checkpoint kilobytes, not megabytes).
            "policy_params": self.parts.algorithm.policy_params(),
            "best_member_params": _cloned(self.parts.algorithm.best_params),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint's state."""
        threads = self.parts.threads
        # At the algorithm's fixed thread count, as its math ran: what a load recomputes
        # (CMA-ES's eigendecomposition) comes back to the bits the run had.
        with threads.fixed() if threads is not None else contextlib.nullcontext():
            self.parts.algorithm.load_state_dict(state["algorithm"])
        self.loop.load_state_dict(state.get("loop") or {})
        self._send_notices()
        self.counters = dict(state["counters"])
        self.elapsed_before = float(state["elapsed"])
        self.last_eval = state["last_eval"]
        if self.parts.policy.normalizer is not None and state["normalizer"] is not None:
            self.parts.policy.normalizer.load_state_dict(state["normalizer"])
        if state.get("reference_batch") is not None:
            self.parts.network.reference_batch = state["reference_batch"]

    def _collect_reference_batch(self) -> None:
        """Virtual batch norm's reference batch, once per run: a resumed run has its
        checkpoint's (:mod:`neuroplug.envs.reference_batch`)."""
        network, net = self.parts.network, self.config.net
        if not network.normalized or network.reference_batch is not None:
            return
        from neuroplug.envs.reference_batch import collect_reference_batch

        network.reference_batch = collect_reference_batch(
            self.parts.env,
            net.vbn_reference_size,
            self.parts.run.seed,
            num_threads=self.config.scheduler.env_threads,
        )

    def _send_notices(self) -> None:
        """A learner's lines for the user go to the loggers (the console and W&B alike)."""
        notices = getattr(self.parts.algorithm, "notices", None)
        while notices:
            self.loggers.message(f"{self.parts.algorithm.config.name}: {notices.pop(0)}")

    def _checkpoint_due(self) -> bool:
        if self._writer.writing:  # the last one is still being written beside this unit
            return False
        run = self.parts.run
        return checkpoint_due(
            self.completed,
            run.checkpoint_interval,
            run.checkpoint_share,
            self._checkpoint_seconds,
            time.perf_counter() - self._checkpoint_written_at,
        )

    def checkpoint(self, state: dict[str, Any] | None = None, wait: bool = False) -> None:
        """Write the latest checkpoint (``state``, or the current one) and the deployable
        policy: a large one beside the next unit (:mod:`neuroplug.training.checkpoint_writer`),
        unless ``wait`` (the run's last)."""
        self._writer.write(state or self.state())
        if wait:
            self._writer.wait()

    def _checkpoint_written(self, seconds: float) -> None:
        self._checkpoint_written_at = time.perf_counter()
        self._checkpoint_seconds = seconds

    def _say_checkpoint_size(self, size: int) -> None:
        if not self._size_said:
            self._size_said = True
            self.loggers.message(
                f"checkpoints hold {size / 2**20:,.0f} MiB: each is written beside the next "
                f"{self.unit} (the previous one stays until the new one is complete)"
            )

    def _write_checkpoint(self, state: dict[str, Any]) -> None:
        deployables = ("policy_params", "best_member_params")
        save_checkpoint(self.run_dir, {k: v for k, v in state.items() if k not in deployables})
        record = PolicyRecord(
            config=state["config"],
            unit=self.unit,
            completed=int(state[self.unit]),
            policy_params=state["policy_params"],
            best_member_params=state["best_member_params"],
            normalizer=normalizer_as_tensors(state["normalizer"]),
            reference_batch=state.get("reference_batch"),
            eval_return_mean=state["last_eval"],
            env=describe_env(self.parts.env),
            network_type=self.parts.network.type_name,
        )
        atomic_save(record.as_dict(), checkpoint_dir(self.run_dir) / BEST_POLICY)

    # ------------------------------------------------------------------ loop

    def _budget_said(self) -> str:
        """`` of 30`` (the unit budget) and `` (12,000 of 50,000 frames)`` (the frame budget)."""
        run = self.parts.run
        said = f" of {run.unit_budget:,}" if run.unit_budget is not None else ""
        if run.max_frames is not None:
            said += f" ({self.counters['frames']:,} of {run.max_frames:,} frames)"
        return said

    def budget_left(self) -> bool:
        """Whether neither the generation (segment) nor the frame budget is spent."""
        run = self.parts.run
        units = run.unit_budget
        if units is not None and self.completed >= units:
            return False
        return run.max_frames is None or self.counters["frames"] < run.max_frames

    def solved(self) -> bool:
        """Whether the last evaluation reached the env's solved return."""
        target = self.parts.env.solved_return
        return bool(
            self.parts.run.stop_when_solved
            and target is not None
            and self.last_eval is not None
            and self.last_eval >= target
        )

    def _looks_solved(self, metrics: dict) -> bool:
        """Whether at least half of this generation's episodes reached the solved return,
        so that an evaluation may stop the run now rather than at the next interval."""
        target = self.parts.env.solved_return
        median = metrics.get("return_median", math.nan)
        return bool(self.parts.run.stop_when_solved and target is not None and median >= target)

    def _log_starting_evaluation(self) -> None:
        """``run.eval_at_start``: the starting policy's evaluation as unit 0, frame 0."""
        self.evaluate_policy()
        nothing = math.nan
        metrics = {
            "env_steps": 0, "frames": 0, "episodes": 0, "return_max": nothing,
            "return_mean": nothing, "return_median": nothing, "frames_per_second": 0.0,
            "eval_return_mean": self.last_eval, "eval_seconds": self.last_eval_seconds,
        }  # fmt: skip
        if self.parts.env.family.writes_text:
            metrics["eval_exact"] = self.last_exact
        metrics.update(self.eval_extras)
        metrics["elapsed"] = self.elapsed_before + time.perf_counter() - self._started
        metrics[self.unit] = 0
        self.loggers.log(metrics)

    def evaluate_policy(self) -> EvaluationResult | None:
        """Play ``run.eval_episodes`` episodes with the deployed policy (no action noise);
        in a multi-agent env, as many worlds, every agent's episode counted, or with
        ``selfplay.eval_opponent`` that many games against it (None returned). Its wall
        time is kept as ``last_eval_seconds`` (a row's ``eval_seconds``)."""
        started = time.perf_counter()
        try:
            return self._evaluate_policy()
        finally:
            self.last_eval_seconds = time.perf_counter() - started

    def _evaluate_policy(self) -> EvaluationResult | None:
        deployed = self.parts.algorithm.policy_params()
        selfplay = self.parts.config.selfplay
        if self._eval_opponent is not None:
            self._evaluate_against(selfplay, deployed)
            return None
        env = self.parts.env
        population, episodes = deployed_population(deployed, env, self.parts.run.eval_episodes)
        request = EvaluationRequest(
            generation=EVALUATION_GENERATION_OFFSET + self.completed,
            **episodes,
            seed=self.parts.run.seed,
            progress=self._evaluation_progress(),
        )
        result = self.parts.scheduler.evaluate(
            population, self.parts.policy, self.parts.backend, request
        )
        self.last_eval = float(result.returns.mean())
        if deployed.dim() == 2:  # a policy per team or agent: each one's agents' mean
            mapping = env_policies(env)
            by_agent = result.returns.reshape(-1, env.lanes_per_env)
            self.eval_extras = {
                f"eval/{name}/return_mean": float(by_agent[:, mapping.agents_of(k)].mean())
                for k, name in enumerate(mapping.names)
            }
        if self.parts.env.family.writes_text:  # what the policy writes, beside its score
            # A text task's reward is 1 for a correct completion alone (TextTask.reward).
            self.last_exact = float((result.returns >= 1.0).mean())
            rows = sample_completions(
                self.parts.env, self.parts.policy, self.parts.backend, deployed, request
            )
            self.loggers.table("eval/completions", ["text", "reward"], rows, self.completed)
        return result

    def _evaluate_against(self, selfplay, params) -> None:
        """``selfplay.eval_opponent``'s games (:mod:`neuroplug.opponents.matches`; a bot or
        another run's policy, :mod:`neuroplug.training.eval_opponent`): the learner's mean
        score and its score rate with Wilson's interval. With a policy per team or agent
        (``(K, D)`` parameters) each policy plays its own agents against the opponent:
        ``eval/<name>/win_rate`` each, the mean score over them all."""
        from neuroplug.opponents.matches import NetworkPlayer, play_match
        from neuroplug.opponents.seating import learner_agent_indices

        parts = self.parts
        env = parts.env
        if params.dim() == 2:
            mapping = env_policies(env)
            seats = [
                (f"eval/{name}/", list(mapping.agents_of(k)))
                for k, name in enumerate(mapping.names)
            ]
            rows = list(params)
        else:
            seats = [("eval/", learner_agent_indices(env.agents, selfplay.learner_agents))]
            rows = [params]
        scores, self.eval_extras = [], {}
        for (prefix, team), row in zip(seats, rows, strict=True):
            result = play_match(
                NetworkPlayer("policy", parts.network, row, parts.policy),
                self._eval_opponent,
                env,
                team,
                parts.run.eval_episodes,
                seed=EVALUATION_GENERATION_OFFSET + self.completed,
            )
            scores += [mine for mine, _ in result.scores]
            low, high = result.interval
            self.eval_extras.update(
                {
                    f"{prefix}win_rate": result.score_rate,
                    f"{prefix}win_rate_low": low,
                    f"{prefix}win_rate_high": high,
                }
            )
        self.last_eval = float(np.mean(scores))

    def _follow_load(self) -> None:
        """Auto threads: one per core on an idle machine, 1 while other processes want the
        cores (:class:`neuroplug.runtime.devices.TorchThreads`); a change is said once."""
        threads = self.parts.threads
        if threads is None or not threads.auto:
            return
        before = threads.threads
        if threads.apply() != before:
            reason = (
                "other processes want the cores"
                if threads.threads < before
                else "the cores are free again"
            )
            self.loggers.message(f"torch threads {before} -> {threads.threads} ({reason})")

    def _progress(self, phase: str, count_frames: bool) -> Progress:
        """A progress callback that adds the run's frames so far to the unit's own."""
        frames_before = self.counters["frames"]

        def report(state: dict[str, Any]) -> None:
            self._follow_load()  # within a long generation or segment too (the check is rate-limited)
            frames = frames_before + (state.get("frames", 0) if count_frames else 0)
            self.loggers.progress({**state, "phase": phase, "frames": frames})

        return report

    def _evaluation_progress(self):
        """An ``EvaluationRequest.progress`` showing the policy evaluation's episodes."""
        report = self._progress("evaluation", count_frames=False)
        running = self.completed + 1
        frame_skip = self.parts.env.frame_skip
        started = time.perf_counter()

        def progress(episodes_done: int, episodes_total: int, env_steps: int) -> None:
            seconds = time.perf_counter() - started
            frames = env_steps * frame_skip
            report(
                {
                    self.unit: running,
                    "episodes_done": episodes_done,
                    "episodes_total": episodes_total,
                    "eval_frames": frames,
                    "eval_frames_per_second": frames / seconds if seconds > 0 else 0.0,
                    "eval_seconds": seconds,
                }
            )

        return progress

    def train_unit(self) -> dict[str, Any]:
        """One unit of training (an algorithm's generation, a learner's segment); returns
        its metrics."""
        started = time.perf_counter()
        frames_before = self.counters["frames"]
        self._follow_load()
        step = self.loop.step(self._progress(self.unit, count_frames=True))
        self._send_notices()
        for name in ("env_steps", "frames", "forward_passes"):
            self.counters[name] += getattr(step, name)
        self.counters["episodes"] += len(step.returns)
        metrics = self._metrics(started, frames_before, step)
        return metrics

    def _metrics(self, started: float, frames_before: int, step: Step) -> dict[str, Any]:
        """The metrics of one unit: counters, return statistics, speed, timings."""
        seconds = time.perf_counter() - started
        returns = step.returns
        finite = returns[~np.isnan(returns)]
        summary = (
            {
                "return_max": float(np.max(finite)),
                "return_mean": float(np.mean(finite)),
                "return_median": float(np.median(finite)),
                "return_min": float(np.min(finite)),
            }
            if len(finite)
            else dict.fromkeys(
                ("return_max", "return_mean", "return_median", "return_min"), math.nan
            )
        )
        metrics: dict[str, Any] = {
            self.unit: self.completed,
            **self.counters,
            **summary,
            "episode_length_mean": float(step.lengths.mean()) if step.lengths.size else math.nan,
            "frames_per_second": (self.counters["frames"] - frames_before) / max(seconds, 1e-9),
            f"{self.unit}_seconds": seconds,
            **{f"time_{phase}": value for phase, value in step.timings.items()},
        }
        metrics.update({f"algo/{key}": value for key, value in step.stats.items()})
        metrics.update(step.metrics)
        metrics.update(_gpu_memory(self.parts.backend.device))
        return metrics

    def train(self, resume_from: Path | None = None) -> dict[str, Any]:
        """Run until a budget is spent or the task is solved; Ctrl-C checkpoints and stops."""
        with self._stop.installed():
            return self._train(resume_from)

    def _train(self, resume_from: Path | None) -> dict[str, Any]:
        self._started = time.perf_counter()
        if resume_from is not None:
            self.restore(load_checkpoint(resume_from))
            self.loggers.message(
                f"resumed from {resume_from} at {self.unit} {self.completed}{self._budget_said()}"
            )
        # Rows logged past the checkpoint by a run that died before checkpointing are stale.
        self.loggers.resumed(self.completed)
        self._collect_reference_batch()
        parts = self.parts
        size = self.loop.describe()
        env = parts.env
        self.loggers.message(
            f"neuroplug: {parts.algorithm.config.name} on {env.task_id} ({env.family}"
            f"{_observation_order(env)}{_stepping(env)}), "
            f"{parts.network.describe()}{_noted(parts.network_note)}, {size}, "
            f"{_products(self.config.run.matmul_precision, parts)}"
            f"backend {parts.backend.config.name} on {parts.backend.device}, scheduler {parts.scheduler.config.name}"
            f"{_sampling(parts.algorithm)}"
            f"{', ' + parts.threads.describe() if parts.threads is not None else ''}"
            f"{_self_play_said(self.config.selfplay, env, self.unit)}; "
            f"writing to {self.run_dir}"
        )
        status = "finished"
        # The state after the last completed unit: what Ctrl-C saves, since an
        # interrupted one has already advanced the algorithm's RNG.
        completed = self.state()
        try:
            if parts.run.eval_at_start and self.completed == 0:
                self._log_starting_evaluation()
            while self.budget_left() and not self.solved():
                metrics = self.train_unit()
                if self._stop.requested:  # a stop whose KeyboardInterrupt was swallowed
                    raise KeyboardInterrupt
                interval = parts.run.eval_interval
                evaluate_now = bool(interval and self.completed % interval == 0)
                evaluate_now = evaluate_now or self._looks_solved(metrics)
                evaluated = evaluate_now or not self.budget_left()
                if evaluated:
                    self.evaluate_policy()
                metrics["eval_return_mean"] = self.last_eval if evaluated else math.nan
                # The evaluation's share of `elapsed`: a run's training clock is `elapsed`
                # less these (a long final evaluation is not training time).
                metrics["eval_seconds"] = self.last_eval_seconds if evaluated else 0.0
                if parts.env.family.writes_text:  # the share of completions exactly right
                    metrics["eval_exact"] = self.last_exact if evaluated else math.nan
                if evaluated:
                    metrics.update(self.eval_extras)
                metrics["elapsed"] = self.elapsed_before + time.perf_counter() - self._started
                metrics[self.unit] = self.completed
                # A stop arriving here waits for the unit's record to be complete.
                with self._stop.deferred():
                    self.loggers.log(metrics)
                    completed = self.state()
                    if self._checkpoint_due():
                        self.checkpoint(completed)
                    elif not self.budget_left() or self.solved():
                        self.checkpoint(completed, wait=True)
            if self.last_eval is None:
                self.evaluate_policy()
                self.checkpoint(wait=True)
            self._writer.wait()
            reason = "solved" if self.solved() else "budget spent"
            self.loggers.message(
                f"done ({reason}) after {self.completed} {self.unit}s, {self.counters['frames']:,} frames: "
                f"policy evaluation mean return {self.last_eval:.2f} over {parts.run.eval_episodes} episodes"
            )
        except BaseException as error:
            # A stop's KeyboardInterrupt can surface as another exception when it lands in
            # library code that wraps what it catches (OmegaConf does): after a stop
            # request, any exception is the interruption.
            if not (isinstance(error, KeyboardInterrupt) or self._stop.requested):
                status = "failed"
                raise
            status = "interrupted"
            self._stop.finishing()
            self.checkpoint(completed, wait=True)
            self.loggers.message(
                f"interrupted: checkpoint of {self.unit} {completed[self.unit]} written to {checkpoint_dir(self.run_dir)}; "
                f"continue with run.resume={self.run_dir}"
            )
        finally:
            if status == "failed":
                with contextlib.suppress(Exception):  # the failure is what the user sees
                    self._writer.wait()
            else:
                folder = checkpoint_dir(self.run_dir)
                self.loggers.artifact(folder / LATEST, "checkpoint", "checkpoint")
                self.loggers.artifact(folder / BEST_POLICY, "best_policy", "model")
            parts.algorithm.close()
            parts.scheduler.close()
            self.loggers.close(status)
            self.lock.release()
        return {
            "status": status,
            self.unit: self.completed,
            "eval_return_mean": self.last_eval,
            **self.counters,
        }


def checkpoint_due(
    completed: int, interval: int, share: float, last_write: float, since_write: float
) -> bool:
    """Whether unit ``completed`` writes a checkpoint: every ``interval`` units, unless the
    last write took ``last_write`` seconds, more than ``share`` of the ``since_write``
    seconds that have passed since it ended (then at the first due unit where it no
    longer does); ``share`` 0: every ``interval`` units."""
    if completed % interval != 0:
        return False
    return not share or last_write <= share * (last_write + since_write)


def _observation_order(env: EnvSpec) -> str:
    """For dict observations, the order their entries are flattened in (envs/flatten.py)."""
    if not env.obs_parts:
        return ""
    parts = (f"{key}[{math.prod(shape)}]" if shape else key for key, shape in env.obs_parts)
    return "; observation = " + " + ".join(parts)


def _stepping(env: EnvSpec) -> str:
    """Where the env's pools step their envs, as its pool kind says it."""
    where = env.pool_kind.stepping(env)
    return f"; {where}" if where else ""


def _noted(note: str) -> str:
    return f" ({note})" if note else ""


def _unwritable(run_dir: Path, config: Experiment, error: OSError) -> ConfigError:
    """The run dir cannot be created or written: name the setting that chose it."""
    field = "run.resume" if config.run.resume else "run.output_dir"
    return ConfigError(
        field,
        f"cannot write the run dir {run_dir} ({error.strerror or error})",
        "a directory you can create and write",
    )


class _StopSignals:
    """Ctrl-C, SIGTERM and SIGUSR1 (see :data:`STOP_SIGNALS`) stop the run: checkpoint, then
    stop.

    The handler raises KeyboardInterrupt at once, and also remembers the request: Python
    drops an exception raised while a finaliser (``__del__``) runs, so the training loop
    checks :attr:`requested` after every unit too and a stop is never lost.
    """

    def __init__(self) -> None:
        self.requested = False
        self._deferring = False

    @contextlib.contextmanager
    def deferred(self):
        """A block a stop does not interrupt: a stop arriving inside is raised at its end."""
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False
        if self.requested:
            raise KeyboardInterrupt

    def finishing(self) -> None:
        """From now on a stop is noted, not raised: the run is already stopping, and a
        second Ctrl-C (or a launcher that signals every process of the job) must not cut
        the checkpoint the first one asked for. (SIGKILL still ends it; the checkpoint
        write is atomic, so the previous one survives that.)"""
        self._deferring = True

    @contextlib.contextmanager
    def installed(self):
        """Handle the stop signals while the block runs (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def interrupt(signum, frame):
            self.requested = True
            if not self._deferring:
                raise KeyboardInterrupt

        previous = {sig: signal.signal(sig, interrupt) for sig in STOP_SIGNALS}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _cloned(tensor):
    """A copy that later in-place updates of the algorithm cannot reach (None stays None)."""
    return None if tensor is None else tensor.clone()


def _gpu_memory(device) -> dict[str, float]:
    """Peak and current GPU memory of the backend's device, in MiB (nothing on CPU)."""
    if getattr(device, "type", None) != "cuda":
        return {}
    import torch

    return {
        "gpu_memory_peak_mb": torch.cuda.max_memory_allocated(device) / 2**20,
        "gpu_memory_mb": torch.cuda.memory_allocated(device) / 2**20,
    }


def _products(precision: str, parts: Components) -> str:
    """What the start-up line says of ``run.matmul_precision`` (nothing at ``highest``):
    on the learner's device, or the backend's for evolution."""
    device = getattr(parts.algorithm, "device", None) or parts.backend.device
    note = describe_matmul_precision(precision, device)
    return f"{note}, " if note else ""


def _self_play_said(selfplay: Any, env: Any, unit: str) -> str:
    """Self-play's pool in words, when it is on (for the start-up line); ``unit``: the
    run's (``segment``, ``generation``), what a snapshot's interval counts."""
    if not selfplay.enabled:
        return ""
    if env.policy_mapping != "shared":
        whose = "a hall of fame per policy"
    else:  # an evolving population's snapshots are its deployed policy's
        whose = "a hall of fame" if unit == "generation" else "a pool"
    interval = selfplay.snapshot_interval
    every = unit if interval == 1 else f"{interval} {unit}s"
    said = (
        f", self-play: {whose} of {selfplay.pool_size} snapshots (one every {every}), "
        f"{selfplay.latest_share:g} of games live, {selfplay.sampling}"
    )
    return said + (f", bots {', '.join(selfplay.bots)}" if selfplay.bots else "")


def _sampling(algorithm: Any) -> str:
    """Where a learner's envs are stepped, when they are in shards (for the start-up line)."""
    describe = getattr(getattr(algorithm, "sampler", None), "describe", None)
    return f" ({describe()})" if callable(describe) else ""
