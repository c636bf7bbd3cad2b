"""The env family guide (docs/env-families.md) is a working package: installed from the
page's own code blocks, its family honours the contract, its env=gridworld option is
found, and a run scores games by the family's info key, not by the shaped reward."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import tomllib

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "env-families.md"


def _install(site: Path) -> None:
    """Write every file the guide shows (its first line names the path) and the
    distribution's metadata (from its pyproject.toml) into ``site``."""
    blocks = re.findall(r"```(?:python|yaml|toml)\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    project = None
    for block in blocks:
        first, _, body = block.partition("\n")
        if not first.startswith("# ") or "/" not in first and not first.endswith(".toml"):
            continue
        path = first[2:].strip()
        if path == "pyproject.toml":
            project = tomllib.loads(body)["project"]
            continue
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(block)
    for package in ("neuroplug_gridworld", "neuroplug_gridworld/conf"):
        (site / package / "__init__.py").write_text("")
    assert project is not None, "the guide shows its pyproject.toml"
    info = site / "neuroplug_gridworld-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
            for group, entries in project["entry-points"].items()
        )
    )


def _neuroplug(site: Path, *arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(site), "WANDB_MODE": "offline"}
    return subprocess.run(
        [sys.executable, "-m", "neuroplug", *arguments],
        capture_output=True,
        text=True,
        env=environment,
        cwd=cwd,
        timeout=300,
    )


def test_the_guide_builds_a_family_package_that_trains_on_its_own_option(tmp_path):
    site = tmp_path / "site"
    _install(site)
    checked = subprocess.run(
        [
            sys.executable,
            "-c",
            "from neuroplug_gridworld.family import Gridworlds\n"
            "from neuroplug.testing import check_env_family\ncheck_env_family(Gridworlds)",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert checked.returncode == 0, checked.stderr
    listing = _neuroplug(site, "--list-plugins", cwd=tmp_path).stdout
    assert re.search(r"^env_family\s+gridworlds\s+neuroplug-gridworld", listing, re.M), listing
    assert re.search(r"^config_option\s+env=gridworld\s+neuroplug-gridworld", listing, re.M)
    run = tmp_path / "run"
    done = _neuroplug(
        site,
        "algo=ppo",
        "env=gridworld",
        "run.max_segments=2",
        "algo.segment_steps=512",
        "run.eval_episodes=2",
        "logger=console",
        f"run.output_dir={run}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "ppo on Gridworld-v0 (gridworlds" in done.stdout, done.stdout
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    # A game's score is the goals reached (0 or 1); the shaped reward would give 1 - 0.01 k
    # for a goal after k steps, and -0.5 for a game that timed out.
    for row in rows:
        for column in ("return_min", "return_max"):
            assert row[column] in ("", "nan") or float(row[column]) in (0.0, 1.0), row
