"""The Hydra application: compose the config, pick the run dir, train.

``python -m neuroplug algo=es env=breakout`` lands in :func:`run_job` with the composed
config. Outputs go to Hydra's run (or sweep) dir; the working directory is not changed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from neuroplug.config.run_dir import created_by_this_process, remove_empty_parents
from neuroplug.errors import NeuroplugError
from neuroplug.training.run_lock import LOCK_FILE, RunDirBusy, RunDirLock

RESUMABLE_RUN_FIELDS = (
    "retries",
    "max_generations",
    "max_segments",
    "max_frames",
    "stop_when_solved",
    "eval_interval",
    "eval_episodes",
    "checkpoint_interval",
    "checkpoint_share",
)
"""``run`` settings a resume may change: the checkpoint's unless the command gives them.
Every other setting (the groups, ``run.seed``, ``run.matmul_precision``,
``run.deterministic``) is the
checkpoint's, whatever the command says: they decide the numbers the run computes."""
RESUMED_GROUPS = ("algo", "env", "net", "backend", "scheduler")


def hydra_output_dir() -> Path | None:
    """The current Hydra job's output dir, or None outside Hydra."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return Path(HydraConfig.get().runtime.output_dir)


def _own_run_dir(config: DictConfig) -> Path:
    """Where this job writes when it is not resuming another run's dir."""
    if config.run.get("output_dir"):
        return Path(config.run.output_dir)
    return hydra_output_dir() or Path("outputs/neuroplug")


def resolve_resume(
    config: DictConfig, given: set[str] | None = None
) -> tuple[DictConfig, Path | None]:
    """For ``run.resume=<dir>``: the checkpoint's config, with this command's loggers and
    the :data:`RESUMABLE_RUN_FIELDS` it gives; one line says what this command changes and
    what of it is ignored. ``given``: the settings the command names (``run.max_frames``,
    ``algo``); by default Hydra's overrides, or outside Hydra (a config composed by hand)
    the ``run`` settings that differ from their defaults and every group that differs from
    the checkpoint's. ``run.resume=auto`` resumes the job's own dir when it holds a
    checkpoint, else starts."""
    resume = config.run.get("resume")
    if not resume:
        return config, None
    from neuroplug.config.run_dir import LATEST, PREVIOUS, check_resumable, checkpoint_dir

    if resume == "auto":
        own = _own_run_dir(config)
        if not any((checkpoint_dir(own) / name).exists() for name in (LATEST, PREVIOUS)):
            config = config.copy()
            with open_dict(config):
                config.run.resume = None
                config.run.output_dir = str(own)
            return config, None
        resume = str(own)
    run_dir = Path(resume).expanduser().resolve()
    check_resumable(run_dir)  # a dir with no checkpoint is refused before torch is imported
    # Imported here: torch comes with it, and a run that does not resume checks its config
    # before importing torch (a bad value's error costs no torch import).
    from neuroplug.training.checkpoint import load_checkpoint

    saved = OmegaConf.create(load_checkpoint(run_dir)["config"])
    if given is None:
        given = _settings_given_on_the_command_line(config)
    changed, ignored = [], []
    for name in sorted(given):
        if name.split(".")[0] in RESUMED_GROUPS and _differs(
            OmegaConf.select(config, name), OmegaConf.select(saved, name)
        ):
            ignored.append(name)
    for name, value in config.run.items():
        if name in ("resume", "output_dir") or f"run.{name}" not in given:
            continue
        if name not in saved.run or value == saved.run[name]:
            continue
        if name in RESUMABLE_RUN_FIELDS:
            changed.append(f"run.{name} {saved.run[name]} -> {value}")
        else:
            ignored.append(f"run.{name}")
    with open_dict(saved):
        for name in RESUMABLE_RUN_FIELDS:
            if f"run.{name}" in given:
                saved.run[name] = config.run[name]
        saved.run.resume = str(run_dir)
        saved.logger = config.logger
    said = []
    if changed:
        said.append(f"this command changes {', '.join(changed)}")
    if ignored:
        said.append(
            f"its {', '.join(ignored)} ignored: the checkpoint's values decide what the run "
            "computes (start a new run to change them)"
        )
    if said:
        print(f"neuroplug: resuming {run_dir}: {'; '.join(said)}", file=sys.stderr)
    return saved, run_dir


def _differs(now: Any, saved: Any) -> bool:
    """Whether a setting of this command differs from the checkpoint's; a null in the
    command (a default the run decides, as ``net.vbn``) differs from nothing."""
    if isinstance(now, DictConfig | ListConfig):
        now = OmegaConf.to_container(now, resolve=True)
    if isinstance(saved, DictConfig | ListConfig):
        saved = OmegaConf.to_container(saved)
    if now is None:
        return False
    if isinstance(now, dict) and isinstance(saved, dict):
        return any(_differs(value, saved.get(key)) for key, value in now.items())
    return now != saved


def _settings_given_on_the_command_line(config: DictConfig) -> set[str]:
    """The settings this command's overrides name (``algo.sigma=0.1`` names ``algo.sigma``;
    ``algo=snes`` names ``algo``). Outside a Hydra run (a test composing by hand), the
    ``run`` settings that differ from their defaults, and every group."""
    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = HydraConfig.get().overrides.task
    except (ImportError, ValueError):
        from neuroplug.config.schema import RunConfig

        defaults = RunConfig()
        run = {
            f"run.{name}"
            for name, value in config.run.items()
            if getattr(defaults, name, value) != value
        }
        return run | set(RESUMED_GROUPS)
    return {override.lstrip("+~").split("=")[0] for override in overrides}


def run_job(config: DictConfig) -> dict[str, Any]:
    """Train one job; returns its summary (Hydra passes it to sweepers)."""
    from neuroplug.envs.make import make_spec
    from neuroplug.experiment.network_choice import check_network_settings
    from neuroplug.experiment.typed import (
        check_budget_unit,
        check_policy_mapping,
        check_self_play,
        check_virtual_batch_norm,
        typed_experiment,
    )
    from neuroplug.plugin_configs.bases import AlgorithmConfig, LearnerConfig
    from neuroplug.plugin_configs.presets import check_learner_task

    config, resume_dir = resolve_resume(config)
    # The front door: past this line only the typed, validated form travels. A bad value is
    # refused here, before the trainer's modules (torch, the plugins) are imported.
    experiment = typed_experiment(config)
    check_budget_unit(experiment)
    check_virtual_batch_norm(experiment)
    check_self_play(experiment)
    check_policy_mapping(experiment)
    check_network_settings(experiment.net)
    env = make_spec(experiment.env)  # the env's errors (an unknown id, a bad kwarg) too
    if isinstance(experiment.algo, LearnerConfig):  # sac on discrete actions, say
        check_learner_task(experiment.algo, env)
    elif isinstance(experiment.algo, AlgorithmConfig):  # final_ram off Atari, say
        experiment.algo.check_task(env)
    from neuroplug.training.trainer import Trainer

    run_dir = resume_dir if resume_dir is not None else _own_run_dir(config)
    if resume_dir is not None:
        # The run goes on in its own dir: the one Hydra made for this command stays unused.
        discard_untouched_run_dir(hydra_output_dir())
    trainer = Trainer(experiment, run_dir, env=env)
    return trainer.train(resume_from=resume_dir)


def _in_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def raised_in_a_job(error: BaseException) -> bool:
    """Whether ``error`` came out of :func:`hydra_entry` (a job neuroplug ran) rather than
    out of Hydra's preparations before it (composing the config, creating the run dir)."""
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code is hydra_entry.__code__:
            return True
        trace = trace.tb_next
    return False


def reported(error: BaseException) -> bool:
    """Whether ``error`` was already printed for the user by the job it ended."""
    return getattr(error, "_neuroplug_reported", False)


# What Hydra leaves in a run dir before neuroplug runs, and what a refused run writes.
_UNTOUCHED_RUN_FILES = {".hydra", "config.yaml", LOCK_FILE}


def discard_untouched_run_dir(run_dir: Path | None) -> None:
    """Remove a run dir this process created that holds nothing but Hydra's record (a refused
    run, or a resume that wrote into the resumed dir, leaves no empty run dir behind), and
    the empty dirs above it inside the current directory. A dir another run made, or one
    another run holds now, is never touched."""
    if run_dir is None or not run_dir.is_dir() or not created_by_this_process(run_dir):
        return
    if any(
        entry.name not in _UNTOUCHED_RUN_FILES and entry.suffix != ".log"
        for entry in run_dir.iterdir()
    ):
        return
    here, run_dir = Path.cwd().resolve(), run_dir.resolve()
    if run_dir == here or run_dir in here.parents:  # never pull the floor from under the user
        return
    try:
        lock = RunDirLock(run_dir).acquire()  # a run that has joined the dir holds it
    except RunDirBusy:
        return
    import shutil

    shutil.rmtree(run_dir, ignore_errors=True)
    lock.release()
    remove_empty_parents(run_dir, stop_at=here)


def hydra_entry(config: DictConfig) -> float | None:
    """The function ``hydra.main`` wraps; returns the final evaluation return (what the
    Optuna sweeper maximises). Bad input gets a one-paragraph message, not a traceback, and
    leaves no empty run dir; in a multirun the job fails and the sweep goes on to the next."""
    try:
        summary = run_job(config)
    except (NeuroplugError, FileNotFoundError) as error:
        print(f"neuroplug: error: {error}", file=sys.stderr)
        discard_untouched_run_dir(hydra_output_dir())
        if config.run.get("output_dir"):
            discard_untouched_run_dir(Path(config.run.output_dir))
        if _in_multirun():
            error._neuroplug_reported = True  # type: ignore[attr-defined]
            raise
        raise SystemExit(2) from None
    value = summary.get("eval_return_mean")
    return None if value is None else float(value)
