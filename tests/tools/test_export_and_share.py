"""The export and share commands: one line naming what was wrong, exit status 2, nothing
half-written where the input was bad."""

from __future__ import annotations

import pytest
from policy_files import KINDS, policy_file

from neuroplug.tools import export, share, watch


def _fails(main, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    return error


def test_a_dir_without_a_policy_is_named(tmp_path, capsys):
    error = _fails(export.main, [str(tmp_path), "--format", "onnx"], capsys)
    assert f"no policy in {tmp_path}" in error and "checkpoints/best_policy.pt" in error


def test_a_file_that_is_not_a_policy_is_refused(tmp_path, capsys):
    stranger = tmp_path / "model.pt"
    import torch

    torch.save({"state_dict": {"w": torch.zeros(2)}}, stranger)
    error = _fails(export.main, [str(stranger), "--format", "torchscript"], capsys)
    assert "is not a neuroplug policy" in error


def test_an_unknown_format_lists_the_formats(compose, tmp_path, capsys):
    path = policy_file(compose, tmp_path, KINDS["mlp"])
    error = _fails(export.main, [str(path), "--format", "tflite"], capsys)
    assert "--format: unknown format 'tflite' (allowed: torchscript, onnx)" in error


def test_export_writes_beside_the_policy_by_default(compose, tmp_path, capsys):
    path = policy_file(compose, tmp_path, KINDS["gru core"])
    export.main([str(path), "--format", "torchscript"])
    assert (tmp_path / "exported" / "policy_torchscript.pt").is_file()
    assert "largest difference 0" in capsys.readouterr().out


def test_share_refuses_a_folder_that_is_not_empty(compose, tmp_path, capsys):
    path = policy_file(compose, tmp_path, KINDS["mlp"])
    out = tmp_path / "shared"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    error = _fails(share.main, [str(path), "--out", str(out)], capsys)
    assert "is not empty" in error
    assert [item.name for item in out.iterdir()] == ["notes.txt"]


def test_an_exported_policy_has_no_cells(compose, tmp_path, capsys):
    path = policy_file(compose, tmp_path, KINDS["mlp"])
    export.main([str(path), "--format", "torchscript"])
    model = tmp_path / "exported" / "policy_torchscript.pt"
    error = _fails(watch.main, [str(model), "--cell", "3", "--no-video"], capsys)
    assert "is an exported policy" in error
