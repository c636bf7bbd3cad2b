"""Watching a run's checkpoint: the scheduler's scores, a video of the right length, clear errors."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

from neuroplug.api import EvaluationRequest
from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.deploy.archive_elites import archive_cell, archive_cells
from neuroplug.envs.make import make_spec
from neuroplug.evaluation.lockstep import EpisodeObserver, LockstepEvaluation
from neuroplug.experiment.network_choice import build_network
from neuroplug.experiment.typed import Experiment
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
from neuroplug.tools.video import gif_frame_ms
from neuroplug.tools.watch import log_video_to_wandb, main, watch
from neuroplug.training.checkpoint import BEST_POLICY, checkpoint_dir
from neuroplug.training.components import build_components

needs_ffmpeg = pytest.mark.skipif(
    importlib.util.find_spec("imageio_ffmpeg") is None, reason="MP4 needs imageio-ffmpeg"
)


def _train(compose, run_dir, overrides):
    run_job(
        compose(["logger=none", "run.max_generations=1", f"run.output_dir={run_dir}", *overrides])
    )
    return run_dir


@pytest.fixture(scope="module")
def cartpole_run(compose, tmp_path_factory):
    """ES with observation normalization, two generations, evaluated on 3 episodes."""
    overrides = ["algo.population_size=4", "run.max_generations=2", "run.eval_episodes=3"]
    return _train(
        compose, tmp_path_factory.mktemp("cartpole"), [*overrides, "net.hidden_sizes=[8]"]
    )


@pytest.fixture(scope="module")
def pong_run(compose, tmp_path_factory):
    overrides = ["env=pong", "env.max_episode_steps=10", "net=nature_cnn", "run.eval_episodes=2"]
    return _train(compose, tmp_path_factory.mktemp("pong"), [*overrides, "algo.population_size=2"])


@pytest.fixture(scope="module")
def hopper_run(compose, tmp_path_factory):
    overrides = ["env=hopper", "env.max_episode_steps=5", "net.hidden_sizes=[8]"]
    overrides += ["algo.population_size=2", "run.eval_episodes=1"]
    return _train(compose, tmp_path_factory.mktemp("hopper"), overrides)


@pytest.fixture(scope="module")
def qd_run(compose, tmp_path_factory):
    """MAP-Elites on CartPole's final cart position and pole angle, 2 generations."""
    overrides = ["algo=map_elites", "algo.behavior=descriptors:cart_and_pole"]
    overrides += ["algo.cells=[6]", "algo.bounds=[[-2.5,2.5]]", "algo.population_size=16"]
    overrides += ["env.max_episode_steps=60", "net.hidden_sizes=[8]", "run.max_generations=2"]
    return _train(compose, tmp_path_factory.mktemp("qd"), overrides)


def _checkpoint(run_dir) -> dict:
    return torch.load(checkpoint_dir(run_dir) / BEST_POLICY, weights_only=False)


def _scheduler_returns(run_dir, key, episodes: int, seed: int) -> np.ndarray:
    """What the run's own scheduler reports for these parameters (a checkpoint key, or the
    parameters themselves) on watch's episodes."""
    state = _checkpoint(run_dir)
    parts = build_components(Experiment.from_yaml(state["config"]))
    if parts.policy.normalizer is not None:
        parts.policy.normalizer.load_state_dict(state["normalizer"])
    request = EvaluationRequest(
        generation=EVALUATION_GENERATION_OFFSET + state["completed"],
        episodes_per_member=episodes,
        seed=seed,
    )
    params = state[key] if isinstance(key, str) else key
    population = Population.dense(params.unsqueeze(0))
    return parts.scheduler.evaluate(population, parts.policy, parts.backend, request).returns[0]


@pytest.mark.parametrize(
    "which, key", [("policy", "policy_params"), ("best", "best_member_params")]
)
@pytest.mark.kernels
def test_scores_are_the_schedulers_for_the_same_episodes(cartpole_run, which, key):
    result = watch(cartpole_run, episodes=4, seed=7, which=which, video=False)
    assert np.array_equal(result.returns, _scheduler_returns(cartpole_run, key, 4, seed=7))
    assert result.video is None


def test_by_default_the_runs_last_evaluation_is_watched(cartpole_run, capsys):
    result = watch(cartpole_run, video=False)
    assert len(result.returns) == 3  # run.eval_episodes
    assert result.returns.mean() == _checkpoint(cartpole_run)["eval_return_mean"]
    output = capsys.readouterr().out
    assert f"return mean {result.returns.mean():.2f}" in output


def test_the_same_seed_plays_the_same_episodes(cartpole_run):
    first = watch(cartpole_run, episodes=3, seed=5, video=False)
    second = watch(cartpole_run, episodes=3, seed=5, video=False)
    other = watch(cartpole_run, episodes=3, seed=6, video=False)
    assert np.array_equal(first.seeds, second.seeds)
    assert np.array_equal(first.returns, second.returns)
    assert np.array_equal(first.lengths, second.lengths)
    assert not np.array_equal(first.seeds, other.seeds)


def test_max_steps_caps_every_episode(cartpole_run):
    result = watch(cartpole_run, episodes=2, seed=0, max_steps=3, video=False)
    assert list(result.lengths) == [3, 3]


class _EpisodeLog(EpisodeObserver):
    """Each work item's rows as the engine shows them: (started, ended) per row."""

    def __init__(self) -> None:
        self.pools = 0
        self.rows: dict[int, list[tuple[bool, bool]]] = {}

    def make_pool(self, env, seeds, num_threads):
        self.pools += 1
        return super().make_pool(env, seeds, num_threads)

    def observe(self, pool, items, env_ids, observations, started, ended) -> None:
        assert len(observations) == len(env_ids) == len(items)
        assert len(set(env_ids.tolist())) == len(env_ids)  # one row per env and step
        for item, start, end in zip(items.tolist(), started, ended, strict=True):
            self.rows.setdefault(item, []).append((bool(start), bool(end)))


def test_the_engines_observer_sees_each_episode_from_its_reset_to_its_last_step():
    """Also where lanes take several episodes and two groups interleave (watch's
    frames: one at the reset, one per step)."""
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

    env = make_spec(EnvConfig(task_id="CartPole-v1"))
    network = build_network(NetConfig(hidden_sizes=[8]), env)
    policy = Policy(network, env, normalize_observations=False)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    population = Population.dense(
        torch.randn(3, network.num_params, generator=torch.Generator().manual_seed(0))
    )
    request = EvaluationRequest(generation=1, episodes_per_member=4, seed=2)

    def evaluate(observer):
        evaluation = LockstepEvaluation(
            env,
            population,
            policy,
            backend,
            request,
            max_envs=5,
            groups=2,
            env_threads=1,
            observer=observer,
        )
        return evaluation.run()

    log = _EpisodeLog()
    result = evaluate(log)
    unobserved = evaluate(None)
    assert np.array_equal(result.returns, unobserved.returns)
    assert np.array_equal(result.lengths, unobserved.lengths)
    assert log.pools == 2
    assert sorted(log.rows) == list(range(12))
    for item, rows in log.rows.items():
        length = result.lengths.flat[item]
        assert rows == [(True, False)] + [(False, False)] * (length - 1) + [(False, True)]
    assert sum(map(len, log.rows.values())) == result.lengths.sum() + result.episodes


def _gif_frames(path) -> tuple[tuple[int, int], int]:
    """(size, total duration in ms): Pillow merges identical neighbouring frames, so the
    number of frames is the total duration over the frame duration."""
    from PIL import Image

    with Image.open(path) as gif:
        total = 0
        for index in range(gif.n_frames):
            gif.seek(index)
            total += gif.info["duration"]
        return gif.size, total


def test_an_atari_es_policy_plays_with_its_virtual_batch_norm(pong_run):
    state = _checkpoint(pong_run)
    assert "vbn: true" in state["config"] and state["reference_batch"] is not None
    assert watch(pong_run, video=False).returns.mean() == state["eval_return_mean"]


def test_atari_gif_shows_the_first_episode_in_rgb(pong_run, tmp_path):
    out = tmp_path / "pong.gif"
    result = watch(pong_run, out=out)
    # By default the run's final evaluation is played again: the scheduler's true game scores.
    assert result.returns.mean() == _checkpoint(pong_run)["eval_return_mean"]
    assert result.video == out
    size, duration = _gif_frames(out)
    assert size == (160, 210)  # EnvPool's RGB screen, not the 84x84 observation
    assert result.video_frames == result.lengths[0] + 1  # first frame, then one per step
    assert duration == result.video_frames * gif_frame_ms(15)


def test_atari_falls_back_to_observation_frames_without_envpool_rendering(
    pong_run, tmp_path, monkeypatch, capsys
):
    from neuroplug.envs import make

    real_make_pool = make.make_pool

    def make_pool_without_render(spec, seeds, num_threads=0, **overrides):
        if "render_mode" in spec.make_kwargs:
            raise TypeError("unexpected keyword argument 'render_mode'")
        return real_make_pool(spec, seeds, num_threads, **overrides)

    monkeypatch.setattr(make, "make_pool", make_pool_without_render)
    out = tmp_path / "observations.gif"
    result = watch(pong_run, episodes=1, out=out, max_steps=5)
    size, duration = _gif_frames(out)
    assert size == (168, 168)  # the 84x84 grayscale frame, upscaled
    assert duration == (result.lengths[0] + 1) * gif_frame_ms(15)
    assert "from the observations" in capsys.readouterr().out


def test_an_observation_frame_is_the_newest_frame_in_grey_or_in_colour():
    from neuroplug.tools.video import OBSERVATION_UPSCALE, observation_frame

    stack = np.random.default_rng(0).integers(0, 256, (12, 4, 5), dtype=np.uint8)
    colour = observation_frame(stack, channels=3)  # 4 frames of 3 colours
    assert colour.shape == (4 * OBSERVATION_UPSCALE, 5 * OBSERVATION_UPSCALE, 3)
    assert np.array_equal(
        colour[::OBSERVATION_UPSCALE, ::OBSERVATION_UPSCALE], stack[9:].transpose(1, 2, 0)
    )
    grey = observation_frame(stack[:4])  # 4 grey frames
    assert np.array_equal(grey[::OBSERVATION_UPSCALE, ::OBSERVATION_UPSCALE, 1], stack[3])


def test_measurements_packed_below_the_picture_stay_out_of_the_video():
    from neuroplug.tools.video import OBSERVATION_UPSCALE, frames_of

    # Two envs' observations: 2 grey frames of 4 rows of picture, then a row of measurements.
    observations = np.random.default_rng(1).integers(0, 256, (2, 2, 5, 6), dtype=np.uint8)
    [first, second] = frames_of(None, "observation", np.arange(2), observations, height=4)
    assert first.shape == (4 * OBSERVATION_UPSCALE, 6 * OBSERVATION_UPSCALE, 3)
    assert np.array_equal(
        second[::OBSERVATION_UPSCALE, ::OBSERVATION_UPSCALE, 0], observations[1, -1, :4]
    )


@needs_ffmpeg
def test_atari_mp4_of_all_episodes(pong_run, tmp_path):
    import imageio_ffmpeg

    out = tmp_path / "pong.mp4"
    result = watch(pong_run, episodes=2, out=out, record_all=True, max_steps=5)
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == result.video_frames == int((result.lengths + 1).sum()) == 12


def test_mujoco_without_opengl_still_reports_scores(hopper_run, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(
        "neuroplug.tools.video.mujoco_render_problem",
        lambda task, kwargs: "no EGL here; install it",
    )
    out = tmp_path / "hopper.gif"
    result = watch(hopper_run, out=out)
    assert result.returns.mean() == _checkpoint(hopper_run)["eval_return_mean"]
    assert result.video is None and not out.exists()
    assert "no video: no EGL here; install it" in capsys.readouterr().out


def test_mujoco_renders_in_a_fresh_process_where_egl_works(hopper_run, tmp_path):
    """The command loads the system libEGL before EnvPool; where no EGL driver exists it
    says how to get one instead (whichever this machine is, the scores come out)."""
    out = tmp_path / "hopper.gif"
    command = [sys.executable, "-m", "neuroplug.tools.watch", str(hopper_run), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "return mean" in done.stdout
    if "no video:" in done.stdout:
        assert "EGL" in done.stdout and not out.exists()
    else:
        size, duration = _gif_frames(out)
        assert size == (480, 480) and duration == 6 * gif_frame_ms(30)


def test_the_command_prints_every_episode_and_the_mean(cartpole_run, capsys):
    main([str(cartpole_run), "--episodes", "2", "--no-video", "--seed", "3", "--wandb"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[1:3]] == [["episode", "0"], ["episode", "1"]]
    assert lines[3].startswith("return mean ") and lines[3].endswith("over 2 episodes")
    assert lines[4:] == ["W&B: skipped (no video was written)"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["{empty}"], "no policy in"),
        (["{run}", "--which", "worst"], "which: unknown choice 'worst' (allowed: policy, best)"),
        (["{run}", "--out", "{file}/video.gif"], "file is not a directory"),
        (["{run}", "--out", "{tmp}/video.avi"], "video.avi is not a .gif or .mp4 file"),
        (["{run}", "--episodes", "0"], "--episodes: must be at least 1"),
    ],
    ids=["no-checkpoint", "unknown-which", "unwritable-out", "unknown-format", "no-episodes"],
)
def test_errors_are_one_line_and_exit_nonzero(cartpole_run, tmp_path, capsys, arguments, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("not a directory")
    places = {"run": cartpole_run, "empty": tmp_path / "empty", "file": tmp_path / "file"}
    places["tmp"] = tmp_path
    with pytest.raises(SystemExit) as exit_info:
        main([argument.format(**places) for argument in arguments])
    assert exit_info.value.code == 2
    output = capsys.readouterr()
    assert output.err.count("\n") == 1 and output.err.startswith("neuroplug.tools.watch: error: ")
    assert message in output.err
    assert "episode" not in output.out  # nothing was played
    assert not (tmp_path / "video.avi").exists()


def test_any_cell_of_a_qd_archive_plays_its_elite(qd_run, capsys):
    main([str(qd_run), "--cell", "list"])
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split(maxsplit=2) for line in lines[1:]]
    fitness = [float(row[1]) for row in rows]
    assert lines[0].split()[:2] == ["cell", "fitness"] and len(rows) > 1
    # The heading names the descriptor's dimensions (a descriptor function: its name).
    assert lines[0].endswith("[descriptors:cart_and_pole[0], descriptors:cart_and_pole[1]]")
    assert fitness == sorted(fitness, reverse=True)  # best first
    cell = int(rows[-1][0])  # the weakest elite: not the run's deployed policy
    result = watch(qd_run, episodes=2, seed=5, video=False, cell=cell)
    elite = archive_cell(qd_run, cell)["params"]
    assert np.array_equal(result.returns, _scheduler_returns(qd_run, elite, 2, 5))
    assert f"cell {cell}'s elite" in capsys.readouterr().out


def test_a_cell_of_a_compact_archive_plays_from_its_seed_chain(compose, tmp_path):
    overrides = ["algo=map_elites", "algo.behavior=descriptors:cart_and_pole"]
    overrides += ["algo.variation=gaussian", "algo.cells=[6]", "algo.bounds=[[-2.5,2.5]]"]
    overrides += ["algo.population_size=16", "env.max_episode_steps=60", "net.hidden_sizes=[8]"]
    run_dir = _train(compose, tmp_path, [*overrides, "run.max_generations=2"])
    cells = archive_cells(run_dir)  # rebuilt: the checkpoint holds seed chains
    cell = int(cells["cells"][-1])
    result = watch(run_dir, episodes=2, seed=5, video=False, cell=cell)
    elite = archive_cell(run_dir, cell)["params"]
    assert np.array_equal(result.returns, _scheduler_returns(run_dir, elite, 2, 5))


def test_a_cell_that_cannot_be_played_is_refused_in_one_line(qd_run, cartpole_run, capsys):
    occupied = set(archive_cells(qd_run)["cells"].tolist())
    empty = next(cell for cell in range(36) if cell not in occupied)
    cases = [
        ([str(qd_run), "--cell", str(empty)], "that cell is empty; the occupied cells are"),
        ([str(qd_run), "--cell", "best"], "--cell: got 'best'; a cell number, or list"),
        ([str(cartpole_run), "--cell", "0"], "holds no archive (quality diversity"),
    ]
    for arguments, message in cases:
        with pytest.raises(SystemExit):
            main([*arguments, "--no-video"])
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error, error


class _FakeWandb(types.ModuleType):
    """Records what watch asks of W&B."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__("wandb")
        self.fail = fail
        self.calls: list = []

    def init(self, **kwargs):
        if self.fail:
            raise RuntimeError("no network\nsecond line")
        self.calls.append(("init", kwargs))
        return types.SimpleNamespace(id=kwargs["id"])

    def Video(self, path):  # noqa: N802 - wandb's name
        return ("video", path)

    def log(self, data):
        self.calls.append(("log", data))

    def finish(self):
        self.calls.append(("finish",))


def test_wandb_resumes_the_runs_wandb_run_offline(tmp_path, monkeypatch):
    fake = _FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    (tmp_path / "wandb_run_id.txt").write_text("abc123\n")
    (tmp_path / "config.yaml").write_text("logger:\n  project: pong-runs\n  entity: null\n")
    video = tmp_path / "watch.gif"
    assert log_video_to_wandb(tmp_path, video) == "W&B: logged watch.gif to run abc123"
    (_, init), log, finish = fake.calls
    assert init["dir"] == str(tmp_path) and init["id"] == "abc123"
    assert init["resume"] == "allow" and init["mode"] == "offline"
    assert init["project"] == "pong-runs"
    assert log == ("log", {"video": ("video", str(video))}) and finish == ("finish",)


def test_wandb_trouble_never_stops_watching(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", _FakeWandb(fail=True))
    message = log_video_to_wandb(tmp_path, tmp_path / "watch.gif")
    assert message == "W&B: skipped (RuntimeError: no network)"
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    assert log_video_to_wandb(tmp_path, tmp_path / "watch.gif").startswith(
        "W&B: skipped (wandb is not installed"
    )
