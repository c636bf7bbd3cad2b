"""Check that ``pip install neuroplug`` finds a wheel for every dependency on each platform.

For each platform below, neuroplug's runtime dependencies are read from ``pyproject.toml``
and their environment markers evaluated for that platform (pip evaluates markers for the
machine it runs on, whatever ``--platform`` says, so this is done here); then pip resolves
each remaining dependency against the index for that platform's wheel tags (``--dry-run
--no-deps --only-binary=:all:``: metadata only, nothing is installed). It fails when a
dependency the markers keep has no wheel there, and when EnvPool is left out where it has
a wheel (the marker would be needlessly strict). Needs the package index; run by
``.ci/run``.

    python scripts/check_platform_wheels.py [--python-version 3.11]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib
from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

PLATFORMS = {
    # name: (marker environment, pip --platform tags)
    "linux x86_64": (
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
        ["manylinux_2_28_x86_64", "manylinux2014_x86_64", "linux_x86_64"],
    ),
    "linux aarch64": (
        {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
        ["manylinux_2_28_aarch64", "manylinux2014_aarch64", "linux_aarch64"],
    ),
    "macOS arm64": (
        {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
        ["macosx_14_0_arm64", "macosx_11_0_arm64"],
    ),
    "Windows amd64": (
        {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
        ["win_amd64"],
    ),
    "macOS x86_64": (
        {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "x86_64"},
        ["macosx_14_0_x86_64", "macosx_10_15_x86_64", "macosx_10_9_x86_64"],
    ),
}
"""Where neuroplug should install: where torch publishes wheels (on Intel Macs its last is
2.2). Windows on ARM and other Linux CPUs have no torch wheel, whatever neuroplug does."""


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(line) for line in project["dependencies"]]


def wheel(requirement: Requirement, tags: list[str], python: str) -> str | None:
    """The wheel pip would take for ``requirement`` on ``tags``, or None if it finds none."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        command = [
            sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
            "--ignore-installed", "--only-binary=:all:", "--python-version", python,
            "--target", str(Path(scratch) / "target"), "--report", str(report),
        ]  # fmt: skip
        for tag in tags:
            command += ["--platform", tag]
        command.append(str(requirement.name) + str(requirement.specifier))
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            if "No matching distribution" in done.stderr:
                return None
            raise RuntimeError(f"pip could not ask the index about {requirement}:\n{done.stderr}")
        install = json.loads(report.read_text())["install"]
        return install[0]["download_info"]["url"].rsplit("/", 1)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-version", default=f"{sys.version_info[0]}.{sys.version_info[1]}")
    arguments = parser.parse_args()
    problems = []
    for platform_name, (environment, tags) in PLATFORMS.items():
        marker_environment = {**default_environment(), **environment}
        for requirement in requirements():
            wanted = requirement.marker is None or requirement.marker.evaluate(marker_environment)
            found = wheel(requirement, tags, arguments.python_version)
            print(
                f"{platform_name:14} {requirement.name:10} {'kept' if wanted else 'left out':9} {found or 'no wheel'}"
            )
            if wanted and found is None:
                problems.append(f"{platform_name}: {requirement.name} is required but has no wheel")
            if not wanted and found is not None:
                problems.append(f"{platform_name}: {requirement.name} is left out but has {found}")
    for problem in problems:
        print("FAIL", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
