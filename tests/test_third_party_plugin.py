"""A stranger's path: build neuroplug's release (an sdist and a wheel) and a third-party
plugin's, install them, then train.

``plugins/neuroplug-cem`` is an example third-party distribution. This test installs
neuroplug and it into a fresh virtualenv with ordinary (non-editable) ``pip install``s,
then checks from outside the repository that ``--list-plugins`` shows ``cem`` once, from
its own distribution, and that ``algo=cem`` trains and checkpoints: entry-point discovery,
the ConfigStore schema and ``conf/`` shipped inside the wheel all work without a checkout.

Nothing is downloaded. The new venv reuses the running interpreter's dependencies (torch,
envpool, hydra, pip, hatchling) through a ``.pth`` file, but not directly: the running
environment has neuroplug installed in editable mode, and its metadata would make every
plugin show up twice (once from the wheel, once from the checkout), hiding whether the
wheels themselves carry the entry points. So the ``.pth`` points at a mirror of those
site-packages (symlinks) that leaves out neuroplug and every distribution that registers
neuroplug plugins. Path lines in a ``.pth`` do not run the ``.pth`` files of the directory
they add, so the editable installs' import hooks stay inactive too.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
"""The first release (pyproject.toml, neuroplug.__version__, CHANGELOG.md)."""
PLUGIN = Path("plugins") / "neuroplug-cem"
PLUGIN_GROUPS = ("neuroplug.algorithms", "neuroplug.backends", "neuroplug.schedulers")
# What a source checkout holds that a build does not need (or that a build writes).
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".gpu-site",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    "outputs",
    "multirun",
    "wandb",
)


def _is_neuroplug_distribution(distribution: metadata.Distribution) -> bool:
    """neuroplug itself, or anything that registers neuroplug plugins."""
    name = (distribution.metadata["Name"] or "").lower()
    return name == "neuroplug" or any(ep.group in PLUGIN_GROUPS for ep in distribution.entry_points)


def _mirror_site_packages(mirror: Path) -> None:
    """Symlink every entry of this interpreter's site-packages, except neuroplug's own."""
    mirror.mkdir()
    directories = [Path(d) for d in site.getsitepackages() if Path(d).is_dir()]
    if site.ENABLE_USER_SITE and Path(site.getusersitepackages()).is_dir():
        directories.append(Path(site.getusersitepackages()))
    for directory in directories:
        hidden = {"__editable__", "_neuroplug"}  # prefixes of editable-install hooks
        for distribution in metadata.distributions(path=[str(directory)]):
            if _is_neuroplug_distribution(distribution):
                # RECORD lists the packages, hooks and the .dist-info dir (their first part).
                hidden.update(Path(file).parts[0] for file in distribution.files or ())
        for entry in directory.iterdir():
            hide = entry.suffix == ".pth" or any(entry.name.startswith(h) for h in hidden)
            if not hide and not (mirror / entry.name).exists():
                (mirror / entry.name).symlink_to(entry)


def _run(command: list[str | Path], cwd: Path, returncode: int = 0, timeout: float = 300) -> str:
    """Run ``command``; fail the test with its output unless it exits with ``returncode``."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))
    }
    environment.update(
        PYTHONNOUSERSITE="1",
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_INPUT="1",
    )
    completed = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == returncode, (
        f"{' '.join(map(str, command))} exited {completed.returncode}:\n{output}"
    )
    return output


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv holding neuroplug and neuroplug-cem, both installed as built wheels."""
    pytest.importorskip("pip")
    root = tmp_path_factory.mktemp("stranger")
    # Build from a clean copy of the checkout others are working in.
    source = root / "neuroplug-src"
    shutil.copytree(REPO, source, ignore=COPY_IGNORE)
    environment = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", environment], cwd=root)
    python = environment / "bin" / "python"
    purelib = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root
    )
    mirror = root / "outer-site-packages"
    _mirror_site_packages(mirror)
    # Appended after the venv's own site-packages, so what the venv installs always wins.
    (Path(purelib.strip()) / "_outer_site_packages.pth").write_text(f"{mirror}\n")
    before = _tree(source)
    dist = root / "dist"
    # The release's artifacts, as `python -m build` makes them: an sdist and a wheel of each.
    for project in (source, source / PLUGIN):
        _run(
            [python, "-m", "hatchling", "build", "-t", "sdist", "-t", "wheel", "-d", dist], project
        )
    pip_install = ["-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index"]
    # neuroplug from its sdist (pip builds a wheel from it: the sdist carries everything a
    # build needs), the plugin from its wheel.
    _run([python, *pip_install, dist / f"neuroplug-{VERSION}.tar.gz"], cwd=root)
    _run([python, *pip_install, dist / f"neuroplug_cem-{VERSION}-py3-none-any.whl"], cwd=root)
    # A build writes nothing into the source tree, so a read-only checkout installs too.
    assert _tree(source) == before, sorted(_tree(source) ^ before)
    return environment


def test_the_release_is_version_0_1_0_and_its_wheel_carries_the_configs(venv):
    import zipfile

    wheel = venv.parent / "dist" / f"neuroplug-{VERSION}-py3-none-any.whl"
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"neuroplug/conf/config.yaml", "neuroplug/api.py"} <= names
    assert "neuroplug_algorithms/es.py" in names  # the first-party plugins ride along
    code = "import neuroplug, importlib.metadata as m; print(neuroplug.__version__, m.version('neuroplug'))"
    assert _run([venv / "bin" / "python", "-c", code], venv.parent).split() == [VERSION] * 2
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"## {VERSION}" in changelog


def _tree(root: Path) -> set[Path]:
    """Every file and folder under ``root``."""
    return set(root.rglob("*"))


def test_installed_packages_come_from_the_venv_not_the_checkout(venv):
    code = (
        "import neuroplug, neuroplug_cem;"
        "from neuroplug.config.paths import conf_dir;"
        "print(neuroplug.__file__); print(neuroplug_cem.__file__); print(conf_dir())"
    )
    for path in _run([venv / "bin" / "python", "-c", code], cwd=venv.parent).split():
        assert Path(path).is_relative_to(venv), f"{path} is not inside the new venv"


def test_list_plugins_shows_cem_once_from_its_own_distribution(venv):
    output = _run([venv / "bin" / "python", "-m", "neuroplug", "--list-plugins"], venv.parent)
    rows = [line.split() for line in output.splitlines()]
    algorithms = {}
    for row in rows:
        if row[:1] == ["algorithm"]:
            algorithms.setdefault(row[1], []).append(row[2])
    assert algorithms["cem"] == ["neuroplug-cem"], output
    assert algorithms["es"] == ["neuroplug"], output
    assert "claimed by" not in output, output  # no name collision between distributions


def test_algo_cem_trains_and_checkpoints_outside_the_repository(venv):
    from neuroplug.training.checkpoint import load_checkpoint

    run_dir = venv.parent / "run"
    output = _run(
        [
            venv / "bin" / "python",
            "-m",
            "neuroplug",
            "algo=cem",
            "env=cartpole",
            "run.max_generations=2",
            "algo.population_size=8",
            "run.eval_episodes=2",
            f"run.output_dir={run_dir}",
        ],
        cwd=venv.parent,  # not the repository: conf/ must come from the installed wheel
    )
    assert re.search(r"^gen\s+1 \|", output, re.MULTILINE), output
    assert re.search(r"^gen\s+2 \|", output, re.MULTILINE), output
    assert "done (" in output, output
    assert (run_dir / "checkpoints" / "latest.pt").is_file(), output
    state = load_checkpoint(run_dir)
    assert state["generation"] == 2
    assert set(state["algorithm"]["algorithm"]) == {"mean", "std"}


def test_a_bad_cem_setting_is_reported_by_its_field(venv):
    command = [venv / "bin" / "python", "-m", "neuroplug", "algo=cem", "algo.elite_fraction=2"]
    output = _run(command, cwd=venv.parent, returncode=2)
    assert "neuroplug: error: algo.elite_fraction:" in output, output
