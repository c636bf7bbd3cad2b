"""The command line: plugin listing and bad input rejected before anything starts."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _neuroplug(*args: str, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neuroplug", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_list_plugins_shows_name_kind_distribution_version_without_importing_torch():
    done = _neuroplug("--list-plugins")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["algorithm", "es", "neuroplug"] == rows[1][:3] or any(
        row[:3] == ["algorithm", "es", "neuroplug"] for row in rows
    )
    assert any(row[:3] == ["backend", "torch", "neuroplug"] for row in rows)
    assert any(row[:3] == ["scheduler", "serial", "neuroplug"] for row in rows)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from neuroplug.cli import list_plugins; list_plugins(); "
            "print('HEAVY', sorted(m for m in ('torch', 'triton', 'envpool', 'neuroplug_algorithms') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
    )
    assert "HEAVY []" in probe.stdout, probe.stdout + probe.stderr


BAD_INPUTS = [
    (["algo.population_size=1"], "algo.population_size"),
    (["algo.population_size=9"], "even population"),
    (["algo.sigma=0"], "algo.sigma"),
    (["algo.sigma=-0.5"], "algo.sigma"),
    (["env=envpool", "env.task_id=NoSuchGame-v5"], "env.task_id"),
    (["env=envpool", "env.task_id=Breakout-v4"], "did you mean"),
    (["net=nature_cnn"], "net.type"),
    (["env=breakout", "net=mlp"], "net.type"),
    (["net.activation=swish"], "net.activation"),
    (["run.max_generations=0"], "run.max_generations"),
    (["run.max_generations=null", "run.max_frames=null"], "never end"),
    (["env.kwargs.num_envs=3"], "env.kwargs"),
    (["env.kwargs.not_a_setting=3"], "env.kwargs"),
    (["scheduler.max_envs=0"], "scheduler.max_envs"),
    (["run.resume=/nonexistent/run"], "run.resume"),
]


@pytest.mark.parametrize(("overrides", "expected"), BAD_INPUTS)
def test_bad_input_fails_before_training_with_a_message_naming_the_field(
    overrides, expected, tmp_path
):
    done = _neuroplug(*overrides, f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert done.returncode != 0
    assert expected in done.stderr, done.stderr
    assert "gen " not in done.stdout  # no generation ran
    assert "Traceback" not in done.stderr


def test_unknown_algorithm_lists_the_available_ones(tmp_path):
    done = _neuroplug("algo=nope", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert done.returncode != 0
    assert "nope" in done.stderr and "es" in done.stderr


def test_wrong_type_is_reported_by_hydra(tmp_path):
    done = _neuroplug("algo.sigma=abc", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert done.returncode != 0
    assert "sigma" in done.stderr
