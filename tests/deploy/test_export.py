"""Exported policies (TorchScript, ONNX through onnxruntime) act as the policy does on the
same observations, recurrent state included, at any batch size; they carry what built
them; a missing extra or a different model is said in one line."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from policy_files import KINDS, policy_file

from neuroplug.deploy.export import (
    ExportError,
    description,
    example_observations,
    export_policy,
    exported_format,
    load_exported,
)
from neuroplug.deploy.loading import load_policy, read_policy

FORMATS = ["torchscript", "onnx"]
EXPORTED_KINDS = ["mlp", "mlp continuous", "gru core", "nature cnn", "recurrent module", "masked"]


def _export(compose, tmp_path, kind: str, format: str):
    path = policy_file(compose, tmp_path, KINDS[kind])
    policy = load_policy(path)
    target = tmp_path / f"exported.{'onnx' if format == 'onnx' else 'pt'}"
    exported = export_policy(
        policy, target, format, description(policy, read_policy(path), "policy")
    )
    return policy, exported


@pytest.mark.parametrize("format", FORMATS)
@pytest.mark.parametrize("kind", EXPORTED_KINDS)
def test_the_exported_model_acts_as_the_policy(compose, tmp_path, kind, format):
    if format == "onnx":
        pytest.importorskip("onnxruntime", reason="ONNX export needs neuroplug[export]")
    policy, exported = _export(compose, tmp_path, kind, format)
    assert exported.max_difference <= 1e-4  # the export's own check, on 7 observations
    model = load_exported(exported.path)
    assert exported_format(exported.path) == format
    for batch in (1, 12):  # the batch is free
        observations = example_observations(policy, batch, seed=batch)
        inputs = [observations]
        if policy.recurrent:
            inputs.append(torch.randn(batch, policy.state_size))
        with torch.no_grad():
            expected = policy(*inputs)
        got = model(*[value.numpy() for value in inputs])
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for want, have in zip(expected, got, strict=True):
            np.testing.assert_allclose(np.asarray(have), want.numpy(), atol=1e-5)
    assert model.metadata["env"]["task_id"] == policy.env["task_id"]
    assert model.metadata["state_size"] == policy.state_size


def test_an_export_that_acts_otherwise_is_refused(compose, tmp_path, monkeypatch):
    path = policy_file(compose, tmp_path, KINDS["mlp continuous"])
    policy = load_policy(path)
    other = load_policy(policy_file(compose, tmp_path / "other", KINDS["mlp continuous"], seed=9))
    import neuroplug.deploy.export as export

    original = export._to_torchscript
    monkeypatch.setattr(
        export,
        "_to_torchscript",
        lambda wrapper, example, target, metadata: original(
            export._Batched(other), example, target, metadata
        ),
    )
    with pytest.raises(ExportError, match="does not act as the policy does"):
        export_policy(policy, tmp_path / "p.pt", "torchscript", {})


def test_onnx_without_its_extra_names_the_extra(compose, tmp_path, monkeypatch):
    real = importlib.import_module

    def without_onnx(name, *args):
        if name.startswith("onnx"):
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_onnx)
    policy = load_policy(policy_file(compose, tmp_path, KINDS["mlp"]))
    with pytest.raises(ExportError, match=r"needs onnx.*pip install 'neuroplug\[export\]'"):
        export_policy(policy, tmp_path / "p.onnx", "onnx", {})


def test_an_unknown_format_is_refused(compose, tmp_path):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["mlp"]))
    with pytest.raises(
        ExportError, match=r"unknown format 'tflite' \(allowed: torchscript, onnx\)"
    ):
        export_policy(policy, tmp_path / "p", "tflite", {})
