"""A policy exported to TorchScript or ONNX: runs without neuroplug, checked on export.

The exported model is the :class:`~neuroplug.deploy.policy_module.PolicyModule`'s
forward for a batch: ``observations (b, *obs_shape) -> actions``, and for a recurrent
policy ``(observations, state (b, H)) -> (actions, new_state)``, the batch size free. It
carries what built it (``neuroplug.json``: the run's config, its env, the parameters'
origin) as TorchScript's extra file or ONNX metadata, so ``neuroplug.tools.watch`` can play
it. Each export is checked before it is reported: the exported model and the module act on
the same observations (:func:`check_export`).

TorchScript needs nothing beyond torch; ONNX needs the ``export`` extra
(``pip install 'neuroplug[export]'``: onnx, onnxscript for the exporter, onnxruntime for
the check).
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from neuroplug.deploy.policy_module import PolicyModule
from neuroplug.errors import NeuroplugError

FORMATS = {"torchscript": "policy_torchscript.pt", "onnx": "policy.onnx"}
"""Export formats -> the file name an export takes by default."""
METADATA = "neuroplug.json"
"""The exported model's description: TorchScript's extra file, ONNX's metadata key."""
EXTRA = "pip install 'neuroplug[export]'"
CHECK_BATCH = 7
"""Observations the check acts on (odd, to catch a batch size fixed by tracing at 2)."""


class ExportError(NeuroplugError):
    """An export that cannot be made (a format, a missing package) or that does not act
    as the policy does."""


class _Batched(nn.Module):
    """The policy's forward on a batch, without its optional arguments (an export's
    signature is fixed): feed-forward ``observations -> actions``."""

    def __init__(self, policy: PolicyModule) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.policy(observations)


class _BatchedRecurrent(_Batched):
    """Recurrent: ``(observations, state) -> (actions, new_state)``."""

    def forward(self, observations: torch.Tensor, state: torch.Tensor):  # type: ignore[override]
        return self.policy(observations, state)


@dataclass
class Exported:
    """Where an export went and how closely it acts as the module does."""

    path: Path
    format: str
    max_difference: float
    """Largest difference between the exported model's and the module's actions on the
    check's observations (discrete: actions that differ, counted)."""


def description(
    policy: PolicyModule, record: Any, which: str, chosen: str | None = None
) -> dict[str, Any]:
    """What an exported model carries about itself (:data:`METADATA`); ``chosen``: which
    of a run's policies per team or agent it is."""
    return {
        **({"policy": chosen} if chosen else {}),
        "format": "neuroplug-export",
        "config": record.config,
        "env": policy.env,
        "state_size": policy.state_size,
        "which": which,
        "unit": record.unit,
        "completed": int(record.completed),
        "eval_return_mean": record.eval_return_mean,
    }


def example_observations(policy: PolicyModule, count: int, seed: int = 0) -> torch.Tensor:
    """``count`` observations of the policy's shape: uint8 frames, or vectors around the
    normalizer's mean (standard normals without one)."""
    generator = torch.Generator().manual_seed(seed)
    shape = (count, *policy.obs_shape)
    if policy.env["obs_dtype"] == "uint8":
        return torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)
    noise = torch.randn(shape, generator=generator, dtype=torch.float64)
    if policy.normalizes:
        noise = policy.mean.cpu() + policy.std.cpu() * noise
    return noise.float()


def export_policy(
    policy: PolicyModule, path: Path, format: str, metadata: dict[str, Any]
) -> Exported:
    """Write ``policy`` to ``path`` in ``format`` (:data:`FORMATS`) with ``metadata``,
    then check it (:func:`check_export`)."""
    if format not in FORMATS:
        raise ExportError(f"--format: unknown format {format!r} (allowed: {', '.join(FORMATS)})")
    policy = policy.cpu().eval()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    wrapper = (_BatchedRecurrent if policy.recurrent else _Batched)(policy).eval()
    example = _inputs(policy, example_observations(policy, 2))
    if format == "torchscript":
        _to_torchscript(wrapper, example, path, metadata)
    else:
        _to_onnx(wrapper, example, path, metadata, policy.recurrent)
    return Exported(path, format, check_export(policy, path, format))


def _inputs(policy: PolicyModule, observations: torch.Tensor) -> tuple[torch.Tensor, ...]:
    if not policy.recurrent:
        return (observations,)
    generator = torch.Generator().manual_seed(1)
    state = torch.randn((len(observations), policy.state_size), generator=generator)
    return observations, state


def _to_torchscript(
    wrapper: nn.Module, example: tuple[torch.Tensor, ...], path: Path, metadata: dict
) -> None:
    with torch.no_grad(), warnings.catch_warnings():
        # The shape checks and the observation mask are decided while tracing, from the
        # example's shape (the batch stays free): the tracer's warnings say so, each time.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        # PyTorch deprecates TorchScript (for torch.export); asked for, it is still written.
        warnings.simplefilter("ignore", DeprecationWarning)
        traced = torch.jit.trace(wrapper, example, check_trace=False)
        torch.jit.save(traced, str(path), _extra_files={METADATA: json.dumps(metadata)})


def _to_onnx(
    wrapper: nn.Module,
    example: tuple[torch.Tensor, ...],
    path: Path,
    metadata: dict,
    recurrent: bool,
) -> None:
    onnx = _required("onnx")
    _required("onnxscript")  # the exporter's own dependency, named before torch fails on it
    batch = torch.export.Dim("batch")
    names = ["observations", "state"] if recurrent else ["observations"]
    outputs = ["actions", "new_state"] if recurrent else ["actions"]
    shapes = {name: {0: batch} for name in names}
    with torch.no_grad(), _exporter_quiet():
        program = torch.onnx.export(
            wrapper,
            example,
            dynamo=True,
            input_names=names,
            output_names=outputs,
            dynamic_shapes=shapes,
            verbose=False,
        )
    program.save(str(path))
    model = onnx.load(str(path))
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA, json.dumps(metadata)
    onnx.save(model, str(path))


@contextlib.contextmanager
def _exporter_quiet():
    """The exporter's notes on what it does not need (torchvision's operators, its own
    deprecations) kept from the user, whose export they do not concern; its errors pass."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.filterwarnings("ignore", message=".*axis name.*", category=UserWarning)
            yield
    finally:
        logger.setLevel(level)


def _required(package: str):
    import importlib

    try:
        return importlib.import_module(package)
    except ImportError:
        raise ExportError(f"ONNX export needs {package}, which is not installed: {EXTRA}") from None


def check_export(policy: PolicyModule, path: Path, format: str) -> float:
    """Run the exported model and ``policy`` on the same :data:`CHECK_BATCH` observations
    (and states); an exported model that acts otherwise raises :class:`ExportError`.
    Returns the largest difference of continuous actions (discrete: the count that differ)."""
    inputs = _inputs(policy, example_observations(policy, CHECK_BATCH, seed=2))
    with torch.no_grad():
        expected = policy(*inputs)
    model = load_exported(path, format)
    got = model(*[tensor.numpy() for tensor in inputs])
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    worst = 0.0
    for want, have in zip(expected, got, strict=True):
        want, have = want.numpy(), np.asarray(have)
        if want.shape != have.shape:
            raise ExportError(
                f"{path} returned shape {have.shape} where the policy's is {want.shape}"
            )
        if want.dtype.kind in "iu":
            worst = max(worst, float(np.count_nonzero(want != have)))
        else:
            worst = max(worst, float(np.max(np.abs(want - have), initial=0.0)))
    if worst > 1e-4:
        raise ExportError(
            f"{path} does not act as the policy does on the same observations "
            f"(largest difference {worst:g})"
        )
    return worst


class ExportedModel:
    """An exported policy as a callable on numpy arrays: ``model(observations[, state])``
    returns actions (and the new state) as numpy arrays; :attr:`metadata` is what it
    carries (:data:`METADATA`)."""

    def __init__(self, path: Path, format: str) -> None:
        self.path, self.format = Path(path), format
        if format == "torchscript":
            extra = {METADATA: ""}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # as for the export
                self._module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
            self.metadata = json.loads(extra[METADATA] or "{}")
        else:
            onnxruntime = _required("onnxruntime")
            onnx = _required("onnx")
            model = onnx.load(str(path), load_external_data=False)
            props = {entry.key: entry.value for entry in model.metadata_props}
            self.metadata = json.loads(props.get(METADATA, "{}"))
            self._session = onnxruntime.InferenceSession(
                str(path), providers=["CPUExecutionProvider"]
            )
            self._names = [entry.name for entry in self._session.get_inputs()]

    @property
    def state_size(self) -> int:
        """H of a recurrent policy's state; 0 for a feed-forward one."""
        return int(self.metadata.get("state_size", 0))

    def __call__(self, *inputs: np.ndarray):
        if self.format == "torchscript":
            with torch.no_grad():
                result = self._module(*[torch.as_tensor(value) for value in inputs])
            if isinstance(result, tuple):
                return tuple(part.numpy() for part in result)
            return result.numpy()
        feeds = {
            name: np.ascontiguousarray(value)
            for name, value in zip(self._names, inputs, strict=True)
        }
        result = self._session.run(None, feeds)
        return tuple(result) if len(result) > 1 else result[0]


def exported_format(path: Path) -> str | None:
    """``onnx`` or ``torchscript`` for an exported policy file, None for anything else."""
    path = Path(path)
    if not path.is_file():
        return None
    if path.suffix == ".onnx":
        return "onnx"
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
        if any(name.endswith(f"extra/{METADATA}") for name in names) and any(
            "/code/" in name for name in names
        ):
            return "torchscript"
    return None


def load_exported(path: Path, format: str | None = None) -> ExportedModel:
    """An exported policy (:func:`exported_format` decides its format when not given)."""
    format = format or exported_format(path)
    if format is None:
        raise ExportError(f"{path} is not a policy neuroplug exported (TorchScript or ONNX)")
    return ExportedModel(path, format)
