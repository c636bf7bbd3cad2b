"""Frames of EnvPool episodes: where they come from and how they become a GIF or an MP4.

EnvPool renders RGB frames itself when a pool is made with ``render_mode="rgb_array"``
(Atari 210x160, classic control, MuJoCo). Where that is unavailable, Atari falls back to
the last grayscale frame of the observation stack, upscaled. MuJoCo renders through an
offscreen EGL context, with two traps this module handles:

- EnvPool's Linux wheel bundles libEGL under a mangled name, which MuJoCo's GL loader
  does not recognise: the system ``libEGL.so.1`` must be loaded into the process *before*
  EnvPool is imported (:func:`prepare_offscreen_gl`), or rendering aborts the process.
- Without a working EGL driver MuJoCo also aborts the whole process instead of raising,
  so :func:`mujoco_render_problem` tries one frame in a child process first.

GIFs need Pillow, MP4s imageio-ffmpeg (which ships its own ffmpeg):
``pip install 'neuroplug[video]'``.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neuroplug.errors import NeuroplugError

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec

VIDEO_FORMATS = (".gif", ".mp4")
OBSERVATION_UPSCALE = 2
"""Pixel repeat of the grayscale observation frames Atari falls back to (84 -> 168)."""
_PROBE_TIMEOUT_S = 120
HOW_TO_ENABLE_MUJOCO = (
    "EnvPool renders MuJoCo through EGL only (MUJOCO_GL is not read): on Debian/Ubuntu "
    "`apt-get install libegl1 libegl-mesa0` renders on the CPU; on a GPU box the NVIDIA "
    "driver's EGL is used (MUJOCO_EGL_DEVICE_ID picks the GPU)"
)
"""What to tell a user whose machine cannot render MuJoCo."""
_egl_problem: str | None = None
"""Why MuJoCo cannot render in this process ("" if it may); None until
:func:`prepare_offscreen_gl` ran."""


class VideoError(NeuroplugError):
    """A video cannot be written where or how it was asked for."""


# --------------------------------------------------------------------------- output


def check_output(path: Path) -> Path:
    """Fail early, before any episode is played, if ``path`` cannot become a video."""
    if path.is_dir():
        raise VideoError(f"--out: {path} is a directory; name a .gif or .mp4 file")
    suffix = path.suffix.lower()
    if suffix not in VIDEO_FORMATS:
        raise VideoError(f"--out: {path} is not a {' or '.join(VIDEO_FORMATS)} file")
    module, package = (
        ("PIL", "Pillow") if suffix == ".gif" else ("imageio_ffmpeg", "imageio-ffmpeg")
    )
    try:
        __import__(module)
    except ImportError:
        raise VideoError(
            f"--out: writing {suffix} needs {package}: pip install 'neuroplug[video]'"
        ) from None
    blocking = next((parent for parent in path.parents if parent.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise VideoError(f"--out: cannot write {path}: {blocking} is not a directory")
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Opening for append is the only check that holds for root and read-only mounts.
        with path.open("ab"):
            pass
    except OSError as error:
        raise VideoError(f"--out: cannot write {path}: {error.strerror or error}") from None
    if not existed:
        path.unlink()
    return path


def default_format() -> str:
    """``.mp4`` when imageio-ffmpeg is installed (much smaller files), else ``.gif``."""
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        return ".gif"
    return ".mp4"


def gif_frame_ms(fps: float) -> int:
    """Milliseconds per GIF frame: GIF counts hundredths of a second, and browsers slow
    frames shorter than 20 ms down to 100 ms."""
    return max(20, 10 * round(100 / fps))


class VideoWriter:
    """Writes RGB frames ``(H, W, 3)`` uint8 to a GIF or an MP4, chosen by the suffix."""

    def __init__(self, path: Path, fps: float) -> None:
        self.path = path
        self.fps = fps
        self.frames = 0
        self._gif_frames: list = []
        self._encoder = None

    def add(self, frame: np.ndarray) -> None:
        """Append one frame."""
        frame = np.ascontiguousarray(frame, dtype=np.uint8)
        if self.path.suffix.lower() == ".gif":
            from PIL import Image

            # Paletted now, so a long episode holds a third of the memory until close().
            self._gif_frames.append(Image.fromarray(frame).quantize(colors=256))
        else:
            self._add_mp4(frame)
        self.frames += 1

    def _add_mp4(self, frame: np.ndarray) -> None:
        # yuv420p (what every player decodes) needs even sides: pad by one edge pixel.
        height, width = frame.shape[:2]
        frame = np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")
        if self._encoder is None:
            import imageio_ffmpeg

            self._encoder = imageio_ffmpeg.write_frames(
                str(self.path),
                (frame.shape[1], frame.shape[0]),
                fps=self.fps,
                codec="libx264",
                pix_fmt_out="yuv420p",
                macro_block_size=2,
                ffmpeg_log_level="error",
            )
            self._encoder.send(None)
        self._encoder.send(frame)

    def close(self) -> int:
        """Finish the file; returns the number of frames written."""
        if self._gif_frames:
            first, *rest = self._gif_frames
            first.save(
                self.path,
                save_all=True,
                append_images=rest,
                duration=gif_frame_ms(self.fps),
                loop=0,
            )
            self._gif_frames = []
        if self._encoder is not None:
            self._encoder.close()
            self._encoder = None
        return self.frames

    def abort(self) -> None:
        """Stop without leaving a half-written file."""
        self._gif_frames = []
        if self._encoder is not None:
            self._encoder.close()
            self._encoder = None
        self.path.unlink(missing_ok=True)


# --------------------------------------------------------------------------- frames


def open_pool(env: EnvSpec, seeds: np.ndarray, num_threads: int = 0, **overrides):
    """An EnvPool with one env per seed that renders frames, where EnvPool can
    (``overrides``: further ``envpool.make`` settings, as for ``make_pool``).

    Returns ``(pool, source, problem)``: ``source`` is ``render`` (EnvPool's RGB frames),
    ``observation`` (Atari's grayscale stack, when EnvPool cannot render) or None;
    ``problem`` says why EnvPool cannot render, if it cannot.
    """
    from neuroplug.envs.make import make_pool

    problem = (
        mujoco_render_problem(env.task_id, env.make_kwargs)
        if env.family.renders_with_opengl
        else None
    )
    if problem is None:
        rendering = replace(env, make_kwargs={**env.make_kwargs, "render_mode": "rgb_array"})
        try:
            return make_pool(rendering, seeds, num_threads, **overrides), "render", None
        except Exception as error:  # EnvPool versions without render_mode reject the kwarg
            problem = f"EnvPool cannot render {env.task_id} ({error})"
    source = "observation" if env.family.video_from_observation and env.is_image else None
    return make_pool(env, seeds, num_threads, **overrides), source, problem


def frames_of(
    pool, source: str, env_ids: np.ndarray, observations: np.ndarray, channels: int = 1,
    height: int | None = None,
) -> list:  # fmt: skip
    """RGB frames of the envs ``env_ids`` of ``pool`` now; ``observations[i]`` is env
    ``env_ids[i]``'s current observation, a stack of frames of ``channels`` channels whose
    top ``height`` rows are the picture (None: all; below them, measurements packed in,
    :mod:`neuroplug.envs.measurements`)."""
    if source == "render":
        return list(pool.render(env_ids=env_ids))
    pictures = observations if height is None else observations[..., :height, :]
    return [observation_frame(observation, channels) for observation in pictures]


def observation_frame(observation: np.ndarray, channels: int = 1) -> np.ndarray:
    """An RGB frame from the newest frame of an observation stack ``(C, H, W)`` whose
    frames are ``channels`` channels each: grey (Atari's), or in colour (3)."""
    if channels == 3:
        newest = observation[-3:].transpose(1, 2, 0)
    else:
        newest = np.repeat(observation[-1][..., None], 3, axis=-1)
    return newest.repeat(OBSERVATION_UPSCALE, axis=0).repeat(OBSERVATION_UPSCALE, axis=1)


def prepare_offscreen_gl() -> bool:
    """Load the system libEGL so MuJoCo can render in this process (see the module doc).

    Must run before EnvPool is imported; returns whether MuJoCo rendering may be tried
    here. Harmless for other envs; later calls return the first answer.
    """
    global _egl_problem
    if _egl_problem is None:
        _egl_problem = ""
        if not sys.platform.startswith("linux"):
            pass  # EnvPool makes its own context elsewhere; the probe decides.
        elif "envpool" in sys.modules:
            _egl_problem = (
                "MuJoCo frames need the system libEGL loaded before EnvPool is imported; "
                "run `python -m neuroplug.tools.watch` in a fresh process"
            )
        else:
            try:
                ctypes.CDLL("libEGL.so.1", mode=ctypes.RTLD_GLOBAL)
            except OSError:
                _egl_problem = f"no libEGL.so.1 on this machine; {HOW_TO_ENABLE_MUJOCO}"
    return not _egl_problem


_PROBE = """
import json, sys, warnings
warnings.filterwarnings("ignore")
from neuroplug.tools.video import prepare_offscreen_gl
prepare_offscreen_gl()
import envpool
task, kwargs = json.loads(sys.argv[1])
pool = envpool.make(task, env_type="gymnasium", num_envs=1, render_mode="rgb_array", **kwargs)
pool.reset()
print(pool.render(env_ids=[0]).shape)
"""


def mujoco_render_problem(task_id: str, make_kwargs: dict) -> str | None:
    """Why MuJoCo frames cannot be rendered here, or None when a test frame rendered."""
    if not prepare_offscreen_gl():
        return _egl_problem
    try:
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE, json.dumps([task_id, make_kwargs], default=str)],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    except subprocess.TimeoutExpired:
        return f"a test render took over {_PROBE_TIMEOUT_S} s; {HOW_TO_ENABLE_MUJOCO}"
    if probe.returncode == 0:
        return None
    lines = [line.strip() for line in (probe.stderr + probe.stdout).splitlines() if line.strip()]
    detail = lines[-1] if lines else f"exit status {probe.returncode}"
    return f"no offscreen OpenGL context ({detail}); {HOW_TO_ENABLE_MUJOCO}"
