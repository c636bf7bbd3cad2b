"""The command line: plugin listing and bad input rejected before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from neuroplug.cli import _whole_numbers


def _neuroplug(*args: str, cwd=None, timeout=120, env=None) -> subprocess.CompletedProcess:
    if env is None:  # neuroplug's own messages, not Hydra's full tracebacks
        env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    return subprocess.run(
        [sys.executable, "-m", "neuroplug", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def test_list_plugins_shows_name_kind_distribution_version_without_importing_torch():
    done = _neuroplug("--list-plugins")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["algorithm", "es", "neuroplug"] == rows[1][:3] or any(
        row[:3] == ["algorithm", "es", "neuroplug"] for row in rows
    )
    assert any(row[:3] == ["backend", "torch", "neuroplug"] for row in rows)
    assert any(row[:3] == ["scheduler", "threaded", "neuroplug"] for row in rows)
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
    (["env=envpool"], "env.task_id: no environment given"),
    (["env=envpool", "env.task_id=NoSuchGame-v5"], "env.task_id"),
    (["env=envpool", "env.task_id=Breakout-v4"], "did you mean"),
    (["net=nature_cnn"], "net.type"),
    (["env=breakout", "net=mlp"], "net.type"),
    (["net.activation=swish"], "net.activation"),
    (["net.init=xavier"], "net.init"),
    (["run.max_generations=0"], "run.max_generations"),
    (["algo=ess"], "did you mean algo=es?"),
    (["env=nosuchenv"], "no env option named 'nosuchenv'"),
    (["experiment=ppo_cartpole"], "did you mean +experiment=ppo_cartpole?"),
    (["alg=es"], "did you mean algo=es?"),
    (["algo.sigmaa=0.1"], "did you mean algo.sigma=0.1?"),
    (["+env.kwargs.num_envs=3"], "set by neuroplug itself"),
    (["+env.kwargs.not_a_setting=3"], "env.kwargs.not_a_setting: is not a setting"),
    (["scheduler.max_envs=0"], "scheduler.max_envs"),
    (["run.resume=/nonexistent/run"], "run.resume"),
]


@pytest.mark.parametrize(("overrides", "expected"), BAD_INPUTS)
def test_bad_input_fails_before_training_with_a_message_naming_the_field(
    overrides, expected, tmp_path
):
    done = _neuroplug(*overrides, f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert done.returncode == 2
    assert expected in done.stderr, done.stderr
    assert "gen " not in done.stdout  # no generation ran
    assert "Traceback" not in done.stderr


def test_help_lists_the_groups_a_user_picks_from_and_not_the_internal_schemas(tmp_path):
    done = _neuroplug("--help", cwd=tmp_path)
    assert done.returncode == 0
    groups = done.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    assert "algo: " in groups and "+experiment: " in groups
    assert "schema" not in groups
    assert "--list-plugins" in done.stdout


def test_a_whole_number_in_scientific_notation_is_an_integer(tmp_path):
    done = _neuroplug("run.max_frames=1e6", "--cfg", "job", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "max_frames: 1000000\n" in done.stdout
    assert _whole_numbers("algo.sigma=1e-2") == "algo.sigma=1e-2"  # not whole: a float
    assert _whole_numbers("run.max_frames=1e6,2.5e6") == "run.max_frames=1000000,2500000"


def test_unknown_algorithm_lists_the_available_ones(tmp_path):
    done = _neuroplug("algo=nope", f"hydra.run.dir={tmp_path}", cwd=tmp_path)
    assert done.returncode != 0
    assert "nope" in done.stderr and "es" in done.stderr


def test_wrong_type_gets_one_line_naming_the_field_and_the_type(tmp_path):
    done = _neuroplug("algo.sigma=abc", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "neuroplug: error: algo.sigma: 'abc' is not a number "
        "(allowed: a number, e.g. algo.sigma=0.02)"
    )
    assert not (tmp_path / "run").exists()


def test_a_run_dir_hydra_cannot_create_names_run_output_dir(tmp_path):
    # run.output_dir is also Hydra's run dir: Hydra fails to create it, before neuroplug runs.
    done = _neuroplug("run.output_dir=/dev/null/run", cwd=tmp_path)
    assert done.returncode == 2
    assert "neuroplug: error: run.output_dir: cannot write the run dir /dev/null/run" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_refused_run_leaves_no_empty_dirs_in_the_default_place(tmp_path):
    done = _neuroplug("algo.sigma=-1", cwd=tmp_path)  # the run dir would be outputs/<date>/...
    assert done.returncode == 2
    assert "neuroplug: error: algo.sigma" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_hydra_full_error_still_gives_the_traceback(tmp_path):
    done = _neuroplug(
        "algo.sigma=abc",
        f"hydra.run.dir={tmp_path / 'run'}",
        cwd=tmp_path,
        env={**os.environ, "HYDRA_FULL_ERROR": "1"},
    )
    assert done.returncode != 0
    assert "Traceback" in done.stderr and "ValidationError" in done.stderr


def test_a_broken_plugin_is_reported_and_the_others_still_run(tmp_path):
    """A third-party plugin whose import fails: named in a warning, selectable only with an error."""
    site = tmp_path / "site"
    info = site / "neuroplug_broken-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: neuroplug-broken\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(
        "[neuroplug.algorithms]\nbroken = neuroplug_broken:Broken\n"
    )
    (site / "neuroplug_broken.py").write_text("raise ImportError('missing CUDA toolkit')\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    common = [
        "run.max_generations=1",
        "algo.population_size=4",
        "run.eval_episodes=1",
        "logger=none",
    ]
    ok = subprocess.run(
        [sys.executable, "-m", "neuroplug", *common, f"hydra.run.dir={tmp_path / 'a'}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "neuroplug-broken 0.3" in ok.stderr and "missing CUDA toolkit" in ok.stderr
    selected = subprocess.run(
        [
            sys.executable,
            "-m",
            "neuroplug",
            "algo=broken",
            *common[:1],
            f"hydra.run.dir={tmp_path / 'b'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert selected.returncode != 0
    assert "from distribution neuroplug-broken 0.3 failed to load" in selected.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], True),
        (["algo=ga", "env=pong"], True),
        (["logger=all"], True),
        (["logger=console"], False),
        (["logger=wandb", "logger=console"], False),  # the last one given wins, as in Hydra
        (["--cfg", "job"], False),
        (["--help"], False),
    ],
)
def test_the_wandb_sidecar_starts_early_only_for_runs_that_log_to_wandb(argv, expected):
    from neuroplug.cli import _will_log_to_wandb

    assert _will_log_to_wandb(argv) is expected


@pytest.mark.parametrize("argument", ["algo=ess", "env=cartpol", "algo=ga,ess"])
def test_a_typo_in_a_group_option_fails_before_torch_or_hydra_is_imported(argument):
    probe = (
        "import sys\n"
        "from neuroplug import cli\n"
        "try:\n"
        f"    cli.main([{argument!r}])\n"
        "except SystemExit as stop:\n"
        "    print(stop.code, 'torch' in sys.modules, 'hydra' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["2", "False", "False"], done.stderr
    group, _, name = argument.partition("=")
    assert f"no {group} option named {name.split(',')[-1]!r}" in done.stderr
    assert "did you mean" in done.stderr


@pytest.mark.parametrize(
    ("argv", "status", "expected"),
    [
        (["algo=es", "algo.sigma=abc"], 2, "algo.sigma: 'abc' is not a number"),
        (["algo=es", "algo.population_size=3"], 2, "algo.population_size"),
        (["algo=ppo", "algo.learning_rate=-1"], 2, "algo.learning_rate: got -1.0"),
        (["scheduler=ray", "scheduler.num_workers=0"], 2, "scheduler.num_workers"),
        (["algo=ppo", "net.vbn=true"], 2, "net.vbn: algo=ppo learns by gradients"),
        (["net.core=lstmm"], 2, "net.core: got 'lstmm' (allowed: none, gru, lstm)"),
        (["net.type=resnet"], 2, "net.type: got 'resnet' (allowed: auto, "),
        (["run.resume=no_such_run"], 2, "run.resume: no usable checkpoint in "),
        (["--help"], None, "== Configuration groups =="),
    ],
)
def test_a_bad_value_and_help_import_neither_torch_nor_a_plugin(argv, status, expected, tmp_path):
    heavy = ("torch", "envpool", "neuroplug_algorithms.es", "neuroplug_learners.ppo", "ray")
    done = _run_cli_in_a_probe([*argv, "logger=none"] if status else argv, heavy, tmp_path)
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr
    if status is None:
        assert "EXIT" not in done.stdout and expected in done.stdout
        assert "algo:" in done.stdout and "name: es" in done.stdout  # the composed config
    else:
        assert f"EXIT {status}" in done.stdout
        assert expected in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["env=envpool", "env.task_id=NoSuchGame-v5"], "env.task_id: "),
        (["+env.kwargs.not_a_setting=3"], "env.kwargs.not_a_setting: "),
        (["env=gymnasium", "env.id=NoSuchEnv-v0"], "env.id: "),
        (["algo=sac", "env=cartpole"], "algo: sac needs bounded continuous (Box) actions"),
        (["algo=ppo", "env=cartpole", "algo.reward_clip=true"], "algo.reward_clip: "),
        (["algo=ns_es", "env=cartpole", "algo.behavior=final_ram"], "algo.behavior: "),
        (["algo=map_elites", "env=pendulum", "algo.behavior=final_ram"], "algo.behavior: "),
    ],
)
def test_a_task_the_env_or_algorithm_cannot_be_is_refused_before_torch_or_a_plugin(
    argv, expected, tmp_path
):
    heavy = ("torch", "neuroplug_algorithms.es", "neuroplug_learners.ppo", "ray")
    if not argv[0].startswith("algo="):
        argv = ["algo=es", *argv]
    done = _run_cli_in_a_probe([*argv, "logger=none"], heavy, tmp_path)
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr
    assert "EXIT 2" in done.stdout and expected in done.stderr, done.stderr


def _run_cli_in_a_probe(
    argv: list[str], heavy: tuple[str, ...], cwd
) -> subprocess.CompletedProcess:
    """``python -m neuroplug <argv>`` in a child that prints ``EXIT <status>`` and then
    ``HEAVY [...]``: which of the ``heavy`` modules it imported."""
    probe = (
        "import sys\n"
        "from neuroplug import cli\n"
        "try:\n"
        f"    cli.main({argv!r})\n"
        "except SystemExit as stop:\n"
        "    print('EXIT', stop.code)\n"
        f"print('HEAVY', [name for name in {heavy!r} if name in sys.modules])\n"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)


def test_a_resume_warns_only_about_settings_the_command_gives(tmp_path):
    run = tmp_path / "run"
    tiny = ["algo=es", "env=cartpole", "algo.population_size=4", "logger=none"]
    first = _neuroplug(*tiny, "run.max_generations=1", f"run.output_dir={run}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    quiet = _neuroplug("run.max_generations=2", f"run.resume={run}", "logger=none", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert "ignored" not in quiet.stderr
    told = _neuroplug(
        "algo.sigma=0.5", "run.max_generations=3", f"run.resume={run}", "logger=none", cwd=tmp_path
    )
    assert told.returncode == 0, told.stderr
    assert "its algo.sigma ignored: the checkpoint's values decide" in told.stderr
