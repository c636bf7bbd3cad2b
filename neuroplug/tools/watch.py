"""Watch a trained policy: ``python -m neuroplug.tools.watch <run dir | policy>``.

Loads the run's ``checkpoints/best_policy.pt`` (or a policy file, a shared folder of
``neuroplug.tools.share``, an exported TorchScript or ONNX model of ``neuroplug.tools.
export``: what someone received can be checked), rebuilds the env, network and policy from
the config stored in it (Hydra is not started), plays N episodes, prints their scores
and writes a video (GIF or MP4) of the first episode, or of all of them. A quality-diversity
run's archive holds a policy per cell: ``--cell N`` plays the elite of cell ``N`` instead
(``--cell list`` prints the occupied cells, their descriptors and fitness).

The episodes are an evaluation of the policy played by the schedulers' episode engine
(:class:`~neuroplug.evaluation.lockstep.LockstepEvaluation`), asked for exactly as the run
asks for its evaluation at the checkpoint's generation; the video's frames are captured
by an observer of that engine, so they show the very episodes that were scored. With the
run's seed (the default) and ``run.eval_episodes`` episodes, watch plays the episodes
whose mean the run reported as ``eval`` (when they fitted in the run's
``scheduler.max_envs``, as by default; watch gives each episode its own env). Scores
are true game scores (Atari: unclipped, summed over all lives).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from neuroplug.deploy.archive_elites import archive_cell, list_cells
from neuroplug.deploy.export import METADATA, ExportedModel, exported_format, load_exported
from neuroplug.deploy.loading import chosen_params, read_policy
from neuroplug.deploy.watch_exported import ExportedBackend, ExportedPolicy
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.errors import NeuroplugError
from neuroplug.evaluation.completions import CompletionRecorder
from neuroplug.evaluation.deployment import deployed_population
from neuroplug.evaluation.lockstep import EpisodeObserver, LockstepEvaluation, lane_seeds
from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
from neuroplug.tools.video import (
    VideoWriter,
    check_output,
    default_format,
    frames_of,
    open_pool,
    prepare_offscreen_gl,
)
from neuroplug.training.policy_file import normalizer_as_arrays
from neuroplug.training.policy_network import set_reference_batch

if TYPE_CHECKING:
    from neuroplug.api import Backend, EvaluationRequest, EvaluationResult
    from neuroplug.envs.spec import EnvSpec
    from neuroplug.nets.policy import Policy

OTHER_FPS = 30.0


class WatchError(NeuroplugError):
    """Watching cannot start: no checkpoint, an unknown choice, a bad value."""


@dataclass
class LoadedPolicy:
    """What watching needs from a policy file, a shared folder or an exported model."""

    config: Any
    """The run's resolved config (a DictConfig)."""
    completed: int
    """The generations (an algorithm's run) or segments (a learner's) done when it was saved."""
    params: torch.Tensor
    normalizer: dict[str, Any] | None
    eval_return_mean: float | None
    reference_batch: Any = None
    """Virtual batch norm's reference observations (a ``torch.Tensor``), when the run used it."""
    unit: str = "generation"
    """What ``completed`` counts: ``generation`` or ``segment``."""
    exported: ExportedModel | None = None
    """An exported model (TorchScript, ONNX) to play instead of ``params``."""


@dataclass
class WatchResult:
    """Scores of the episodes watched and where their video went."""

    seeds: np.ndarray
    returns: np.ndarray
    lengths: np.ndarray
    video: Path | None
    video_frames: int


def load_watched(source: Path, which: str = "policy", cell: int | None = None) -> LoadedPolicy:
    """What ``source`` holds to play: a run's output dir or policy file (its ``which``
    parameters, or with ``cell`` the elite of that cell of the run's QD archive), a shared
    folder (:mod:`neuroplug.deploy.share`) or an exported model (:mod:`neuroplug.deploy.export`)."""
    from omegaconf import OmegaConf

    source = Path(source)
    exported = exported_format(source)
    if exported is not None:
        if cell is not None or which != "policy":
            raise WatchError(
                f"{source} is an exported policy: it holds one set of parameters "
                "(--cell and --which read a run dir)"
            )
        model = load_exported(source, exported)
        if model.metadata.get("format") != "neuroplug-export":
            raise WatchError(f"{source} carries no {METADATA}: it was not exported by neuroplug")
        meta = model.metadata
        return LoadedPolicy(
            config=OmegaConf.create(meta["config"]),
            completed=int(meta["completed"]),
            unit=meta["unit"],
            params=torch.zeros(1),
            normalizer=None,
            eval_return_mean=meta.get("eval_return_mean"),
            exported=model,
        )
    record = read_policy(source)
    params = chosen_params(record, which) if cell is None else archive_cell(source, cell)["params"]
    return LoadedPolicy(
        config=OmegaConf.create(record.config),
        completed=int(record.completed),
        unit=record.unit,
        params=params.float(),
        normalizer=normalizer_as_arrays(record.normalizer),
        reference_batch=record.reference_batch,
        eval_return_mean=record.eval_return_mean,
    )


def build_player(loaded: LoadedPolicy) -> tuple[EnvSpec, Policy, Backend]:
    """(env spec, policy, backend) from the checkpoint's config."""
    from neuroplug.config.schema import EnvConfig, NetConfig
    from neuroplug.config.typed import to_dataclass
    from neuroplug.envs.make import make_spec
    from neuroplug.nets.policy import Policy
    from neuroplug.training.components import build_backend, build_env_and_network

    config = loaded.config
    if loaded.exported is not None:
        env = make_spec(to_dataclass(EnvConfig, config.env, "env"))
        return env, ExportedPolicy(env, loaded.exported), ExportedBackend(loaded.exported)
    env, network = build_env_and_network(
        to_dataclass(EnvConfig, config.env, "env"), to_dataclass(NetConfig, config.net, "net")
    )
    if loaded.params.shape[-1] != network.num_params:
        raise WatchError(
            f"the checkpoint holds {loaded.params.shape[-1]} parameters but its config builds "
            f"{network.describe()}"
        )
    set_reference_batch(network, loaded.reference_batch)
    # The checkpoint says whether the run normalized observations; no algorithm plugin needed.
    policy = Policy(network, env, normalize_observations=loaded.normalizer is not None)
    if policy.normalizer is not None:
        policy.normalizer.load_state_dict(loaded.normalizer)
    return env, policy, build_backend(config.backend, network)


def evaluation_request(seed: int, completed: int, episodes: int) -> EvaluationRequest:
    """The request of the run's evaluation after ``completed`` generations or segments (as
    the trainer makes it)."""
    from neuroplug.api import EvaluationRequest

    return EvaluationRequest(
        generation=EVALUATION_GENERATION_OFFSET + completed,
        episodes_per_member=episodes,
        seed=seed,
    )


class FrameRecorder(EpisodeObserver):
    """Writes the frames of episodes ``0..recorded-1`` of a one-member evaluation (whose
    work items are its episodes) to a video, one episode after another.

    Each episode gives its first frame, after its reset, and one per step, its last
    included. Episode 0 streams into the file; the others wait for their turn.
    """

    def __init__(self, writer: VideoWriter, recorded: int = 1) -> None:
        self.writer = writer
        self.recorded = recorded
        self.pending: dict[int, list[np.ndarray]] = {episode: [] for episode in range(1, recorded)}
        self.source: str | None = None
        """``render`` (EnvPool's RGB frames), ``observation`` (Atari's grayscale stack) or None."""
        self.problem: str | None = None
        """Why EnvPool cannot render, if it cannot."""
        self.task_id = ""
        """The env's EnvPool task, for :attr:`problem` (known once the pool is made)."""
        self.channels = 1
        """Channels of one frame of its image observations (3: colour frames)."""
        self.height: int | None = None
        """Rows of its image observations that are the picture (None: all), where
        measurements are packed below it."""

    def make_pool(self, env: EnvSpec, seeds: np.ndarray, num_threads: int, **overrides):
        """A pool that renders, where EnvPool can (see :func:`neuroplug.tools.video.open_pool`)."""
        pool, self.source, self.problem = open_pool(env, seeds, num_threads, **overrides)
        self.task_id = env.task_id
        self.channels = env.obs_shape[0] // env.frame_stack if env.is_image else 1
        layout = env.measurement_layout
        self.height = None if layout is None else layout.frame[1]
        return pool

    def observe(
        self,
        pool,
        items: np.ndarray,
        env_ids: np.ndarray,
        observations: np.ndarray,
        started: np.ndarray,
        ended: np.ndarray,
    ) -> None:
        """One frame per row of a recorded episode: its reset, then each of its steps."""
        rows = np.flatnonzero(items < self.recorded)
        if self.source is None or not len(rows):
            return
        try:
            frames = frames_of(
                pool, self.source, env_ids[rows], observations[rows], self.channels, self.height
            )
        except RuntimeError as error:  # "render not implemented for this environment"
            self.source, self.problem = None, f"EnvPool cannot render {self.task_id} ({error})"
            return
        for episode, frame in zip(items[rows], frames, strict=True):
            if episode == 0:
                self.writer.add(frame)
            else:
                self.pending[int(episode)].append(frame)

    def finish(self) -> None:
        """Write the episodes that waited, in episode order."""
        for episode in range(1, self.recorded):
            for frame in self.pending.pop(episode):
                self.writer.add(frame)


def play(
    env: EnvSpec,
    policy: Policy,
    backend: Backend,
    params: torch.Tensor,
    request: EvaluationRequest,
    recorder: FrameRecorder | None = None,
) -> tuple[np.ndarray, EvaluationResult]:
    """Evaluate ``params`` on the request's episodes with the schedulers' episode engine.

    One group with a lane per episode, so each episode is played from its own env seed.
    Returns the episodes' env seeds and the evaluation's result.
    """
    # One policy on every lane, or a policy per team or agent on its agents' lanes.
    worlds = request.episodes_per_member // env.lanes_per_env
    population, settings = deployed_population(params, env, worlds)
    request = replace(request, **settings)
    evaluation = LockstepEvaluation(
        env,
        population,
        policy,
        backend,
        request,
        max_envs=len(population) * request.episodes_per_member,
        groups=1,
        env_threads=0,
        observer=recorder,
    )
    seeds = lane_seeds(request, evaluation.ledger, evaluation.num_lanes)
    return seeds, evaluation.run()


def watch(
    run_dir: Path,
    episodes: int | None = None,
    out: Path | None = None,
    which: str = "policy",
    seed: int | None = None,
    max_steps: int | None = None,
    video: bool = True,
    record_all: bool = False,
    fps: float | None = None,
    cell: int | None = None,
) -> WatchResult:
    """Play a run's policy (or its archive's ``cell``), print the scores, write the video;
    see the module docstring.

    ``episodes`` and ``seed`` default to the run's ``eval_episodes`` and ``seed``.
    """
    prepare_offscreen_gl()  # before EnvPool is imported, so that MuJoCo can render
    from omegaconf import OmegaConf

    run_dir = Path(run_dir)
    loaded = load_watched(run_dir, which, cell)
    run = loaded.config.run
    episodes = int(run.eval_episodes) if episodes is None else episodes
    seed = int(run.seed) if seed is None else seed
    for name, value, low in (("episodes", episodes, 1), ("max-steps", max_steps, 1)):
        if value is not None and value < low:
            raise WatchError(f"--{name}: must be at least {low}, got {value}")
    if not 0 <= seed < 2**31:
        raise WatchError(f"--seed: must lie in [0, 2**31), got {seed}")
    if fps is not None and not fps > 0:
        raise WatchError(f"--fps: must be positive, got {fps}")
    path = None
    env, policy, backend = build_player(loaded)
    if env.family.writes_text:
        video = False  # a text task's episodes are printed: each one's prompt and completion
    if video:
        name = "watch" if cell is None else f"watch_cell{cell}"
        folder = run_dir if run_dir.is_dir() else run_dir.parent  # a policy file's folder
        path = check_output(Path(out) if out else folder / f"{name}{default_format()}")
    if max_steps is not None:
        env = replace(
            env,
            max_episode_steps=max_steps,
            make_kwargs={**env.make_kwargs, "max_episode_steps": max_steps},
        )
    native = env.family.native_fps  # the emulator's frames per second, where it has them
    fps = fps or (native / env.frame_skip if native else OTHER_FPS)
    evaluated = loaded.eval_return_mean
    algorithm = OmegaConf.select(loaded.config, "algo.name", default="the")
    chosen = f"cell {cell}'s elite" if cell is not None else f"{which} parameters"
    print(
        f"watch: {algorithm} {chosen} of {loaded.unit} "
        f"{loaded.completed} on {env.task_id}"
        + (f"; the run's last evaluation: mean {evaluated:.2f}" if evaluated is not None else ""),
        flush=True,
    )
    # A multi-agent env plays ``episodes`` worlds, each agent's episode its own row.
    agents = env.agents or ()
    mapping = env_policies(env)
    request = evaluation_request(seed, loaded.completed, episodes * env.lanes_per_env)
    writer = VideoWriter(path, fps) if path else None
    recorder = FrameRecorder(writer, episodes if record_all else 1) if writer else None
    completions = CompletionRecorder(env) if env.family.writes_text else None
    try:
        seeds, played = play(env, policy, backend, loaded.params, request, recorder or completions)
        if recorder:
            recorder.finish()
        frames = writer.close() if writer else 0
    except BaseException:
        if writer:
            writer.abort()
        raise
    returns, lengths = played.returns.ravel(), played.lengths.ravel()
    for index, (episode_seed, score, length) in enumerate(
        zip(seeds, returns, lengths, strict=True)
    ):
        text = f"  {completions.texts.get(index, '')!r}" if completions else ""
        if agents:  # the world's episode, and whose return this row is
            world, agent = divmod(index, len(agents))
            text += f"  world {world} {agents[agent]}"
            if loaded.params.dim() == 2:
                text += f" ({mapping.names[mapping.of_agent[agent]]})"
        print(
            f"episode {index:3d}  seed {episode_seed:10d}  return {score:10.2f}  "
            f"steps {length:6d}{text}"
        )
    worlds = f" ({episodes} worlds of {len(agents)} agents)" if agents else ""
    print(
        f"return mean {returns.mean():.2f} std {returns.std():.2f} "
        f"min {returns.min():.2f} max {returns.max():.2f} over {len(returns)} episodes{worlds}"
    )
    if path and not frames:
        print(f"no video: {recorder.problem or 'no frames were rendered'}")
        path.unlink(missing_ok=True)
        path = None
    elif path:
        fallback = ""
        if recorder.source == "observation":
            fallback = f", from the observations: {recorder.problem}"
        print(f"video: {path} ({frames} frames at {fps:g} fps{fallback})")
    return WatchResult(seeds, returns, lengths, path, frames)


def log_video_to_wandb(run_dir: Path, video: Path) -> str:
    """Log ``video`` as ``video`` to the run's W&B run; returns one line saying what happened.

    Resumes the run by the id the W&B logger keeps in ``<run dir>/wandb_run_id.txt`` (a new
    run without it), in the mode the W&B logger would choose. Never raises: watching is
    not worth losing over W&B.
    """
    try:
        import wandb
    except ImportError:
        return "W&B: skipped (wandb is not installed: pip install wandb)"
    from omegaconf import OmegaConf

    from neuroplug.loggers.wandb_logger import RUN_ID_FILE, choose_mode

    run_dir = Path(run_dir)
    id_file = run_dir / RUN_ID_FILE
    run_id = id_file.read_text().strip() if id_file.is_file() else None
    try:
        # An id names a run within a project: resume in the project the run logged to.
        record = run_dir / "config.yaml"
        config = OmegaConf.load(record) if record.is_file() else OmegaConf.create()
        run = wandb.init(
            dir=str(run_dir),
            id=run_id or None,
            resume="allow",
            mode=choose_mode(OmegaConf.select(config, "logger.mode", default=None)),
            project=OmegaConf.select(config, "logger.project", default=None),
            entity=OmegaConf.select(config, "logger.entity", default=None),
            job_type="watch",
        )
        try:
            wandb.log({"video": wandb.Video(str(video))})
        finally:
            wandb.finish()
    except Exception as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"W&B: skipped ({type(error).__name__}{': ' + reason if reason else ''})"
    return f"W&B: logged {video.name} to run {getattr(run, 'id', run_id)}"


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.watch``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.watch", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "run_dir",
        type=Path,
        metavar="source",
        help="a neuroplug run's output dir, a policy file, a shared folder "
        "(neuroplug.tools.share) or an exported model (neuroplug.tools.export)",
    )
    parser.add_argument(
        "--episodes", type=int, default=None, help="episodes to play (default: run.eval_episodes)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="video file, .gif or .mp4 (default: <source>/watch.mp4 when imageio-ffmpeg "
        "is installed, else watch.gif)",
    )
    parser.add_argument(
        "--which",
        default="policy",
        metavar="{policy,best}",
        help="policy: the algorithm's deployed parameters (default); best: the best member ever",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="episode seeds' root (default: the run's seed)"
    )
    parser.add_argument("--max-steps", type=int, default=None, help="cap on steps per episode")
    parser.add_argument("--no-video", action="store_true", help="scores only")
    parser.add_argument(
        "--all-episodes",
        action="store_true",
        help="video of every episode, one after another (default: the first)",
    )
    parser.add_argument("--fps", type=float, default=None, help="video frame rate")
    parser.add_argument(
        "--cell",
        default=None,
        help="a QD run: play the elite of this archive cell; 'list' prints the occupied cells",
    )
    parser.add_argument(
        "--wandb", action="store_true", help="also log the video to the run's W&B run"
    )
    parser.add_argument(
        "--opponent",
        default=None,
        help="a multi-agent game: play the source against another run, random or a bot "
        "(package.module:function), seats alternating (neuroplug.tools.match)",
    )
    arguments = parser.parse_args(argv)
    if arguments.opponent is not None:
        _play_match(arguments)
        return
    try:
        if arguments.cell == "list":
            print(list_cells(arguments.run_dir))
            return
        cell = _cell_number(arguments.cell)
        result = watch(
            arguments.run_dir,
            episodes=arguments.episodes,
            out=arguments.out,
            which=arguments.which,
            seed=arguments.seed,
            max_steps=arguments.max_steps,
            video=not arguments.no_video,
            record_all=arguments.all_episodes,
            fps=arguments.fps,
            cell=cell,
        )
    except NeuroplugError as error:
        print(f"neuroplug.tools.watch: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if arguments.wandb:
        if result.video is None:
            print("W&B: skipped (no video was written)")
        else:
            print(log_video_to_wandb(arguments.run_dir, result.video))


def _play_match(arguments: argparse.Namespace) -> None:
    """``--opponent``: the source against it (:func:`neuroplug.tools.match.match`), the
    first game in the video."""
    from neuroplug.tools.match import match
    from neuroplug.tools.video import default_format

    out = arguments.out
    if out is None and not arguments.no_video:
        folder = arguments.run_dir if arguments.run_dir.is_dir() else arguments.run_dir.parent
        out = folder / f"match{default_format()}"
    games = arguments.episodes or 10
    try:
        result = match(
            arguments.run_dir, arguments.opponent, games, arguments.seed or 0,
            arguments.max_steps, None if arguments.no_video else out,
            arguments.fps or 30.0,
        )  # fmt: skip
    except NeuroplugError as error:
        print(f"neuroplug.tools.watch: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"against {arguments.opponent}: {result.describe()}")
    if out is not None and not arguments.no_video:
        print(f"video of the first game: {out}")


def _cell_number(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise WatchError(f"--cell: got {text!r}; a cell number, or list") from None


if __name__ == "__main__":
    main()
