"""A text task trained end to end: ``net.type=auto`` is the cached causal transformer, a
low-rank ES run logs sample completions at its evaluations, and watch prints what the
trained policy writes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from neuroplug.app import run_job
from neuroplug.tools.watch import watch

TINY = [
    "algo=es",
    "env=sorting",
    "env.kwargs.length=3",
    "net.kwargs.d_model=16",
    "net.kwargs.heads=2",
    "net.kwargs.layers=1",
    "algo.perturbation=lowrank",
    "algo.lowrank_min_size=200",
    "algo.population_size=8",
    "algo.episodes_per_member=3",
    "run.max_generations=2",
    "run.eval_interval=1",
    "run.eval_episodes=4",
    "logger=console",
]


@pytest.mark.parametrize("scoring", ["completion", "likelihood"])
def test_a_low_rank_es_run_writes_and_logs_completions(compose, tmp_path, capsys, scoring):
    # likelihood: the answer's probability is the fitness; what is shown is still what
    # greedy decoding writes.
    overrides = [*TINY, f"env.kwargs.scoring={scoring}", f"run.output_dir={tmp_path}"]
    summary = run_job(compose(overrides))
    assert summary["frames"] > 0
    printed = capsys.readouterr().out
    assert "causal_lm d16 x 1 layers" in printed  # what net.type=auto builds here
    samples = [line for line in printed.splitlines() if "eval/completions after" in line]
    assert len(samples) == 2  # one per evaluation
    assert ":" in samples[0] and "'" in samples[0]  # a prompt and its completion, quoted
    run_dir = next(Path(tmp_path).rglob("best_policy.pt")).parents[1]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    for row in rows:  # the share of exactly right completions beside the mean reward
        exact, mean = float(row["eval_exact"]), float(row["eval_return_mean"])
        assert 0.0 <= exact <= mean + 1e-9 <= 1.0 + 1e-9
    result = watch(run_dir, episodes=3)
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("episode")]
    assert len(shown) == 3 and result.video is None
    for line, score in zip(shown, result.returns, strict=True):
        text = line.split("'")[1]
        assert len(text) >= 4 and text[3] == ":"  # three digits, the colon, the completion
        assert f"{score:.2f}" in line


def test_sample_completions_are_a_w_and_b_table(compose, tmp_path, monkeypatch):
    import json

    from wandb_offline import offline_runs

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    overrides = [item for item in TINY if not item.startswith("logger=")]
    run_job(compose([*overrides, "logger=wandb", f"run.output_dir={tmp_path}"]))
    ((_, run),) = offline_runs(tmp_path).items()
    # each evaluation's table, in the row of the generation it followed
    logged = [row for row in run.history if "eval/completions/_type" in row]
    assert [row["generation"] for row in logged] == [1, 2]
    assert all(row["eval/completions/_type"] == "table-file" for row in logged)
    (first, *_) = sorted(Path(tmp_path).rglob("completions_*.table.json"))
    table = json.loads(first.read_text())
    assert table["columns"] == ["text", "reward"] and len(table["data"]) == 8
    assert all(text[3] == ":" and 0.0 <= reward <= 1.0 for text, reward in table["data"])


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["argmax", "sampled"])
def test_every_schedule_plays_the_same_generations(compose, tmp_path, temperature):
    """Serial, threaded and pipelined (two groups of lanes) end a low-rank text run in the
    same state: the same prompts, completions and rewards whatever the schedule, tokens
    sampled at a temperature included (their noise is a function of episode and step)."""
    from neuroplug.testing.resume_check import same
    from neuroplug.training.checkpoint import load_checkpoint

    quiet = [item for item in TINY if not item.startswith(("logger=", "run.eval_interval"))]
    quiet.append(f"algo.action_temperature={temperature}")
    states = {}
    for name, schedule in (
        ("serial", ["scheduler=serial"]),
        ("threaded", ["scheduler=threaded"]),
        ("pipelined", ["scheduler=pipelined", "scheduler.groups=2"]),
    ):
        run_job(compose([*quiet, *schedule, "logger=none", f"run.output_dir={tmp_path / name}"]))
        states[name] = load_checkpoint(tmp_path / name)
    for name in ("threaded", "pipelined"):
        for key in ("algorithm", "counters", "last_eval"):
            assert same(states["serial"][key], states[name][key]), (name, key)


def test_sampled_tokens_give_members_fitness_to_rank(compose, tmp_path):
    """Tokens sampled at a temperature (the argmax of the outputs plus Gumbel noise of
    episode and step) make members' completions, and so their fitness, differ: ES's
    update moves (a greedy population can tie every member and move nothing)."""
    overrides = [item for item in TINY if not item.startswith(("logger=", "run.max_gen"))]
    overrides += ["run.max_generations=1", "logger=none", "algo.action_temperature=2.0"]
    run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    (row,) = csv.DictReader(next(tmp_path.rglob("metrics.csv")).open())
    assert float(row["algo/gradient_norm"]) > 0.0
    assert float(row["return_max"]) > float(row["return_min"])


def test_an_exported_language_model_writes_what_the_policy_writes(compose, tmp_path):
    """The trained model leaves neuroplug as TorchScript and writes the same completions:
    the prompt read at once (a block of queries as wide as the context, the one shape a
    traced graph keeps), then a token a step from its KV cache."""
    import numpy as np
    import torch

    import neuroplug
    from neuroplug.deploy.export import load_exported
    from neuroplug.envs.text.env import TextTaskEnv
    from neuroplug.tools.export import export

    overrides = [item for item in TINY if not item.startswith(("logger=", "run.eval_"))]
    run_job(compose([*overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    run_dir = next(Path(tmp_path).rglob("best_policy.pt")).parents[1]
    policy = neuroplug.load_policy(run_dir)
    model = load_exported(export(run_dir, "torchscript").path)
    env = TextTaskEnv("sorting", length=3)
    for seed in range(3):
        observation, _ = env.reset(seed=seed)
        state = policy.initial_state(1)
        exported_state = state.numpy()
        done = False
        while not done:
            with torch.no_grad():
                token, state = policy(torch.as_tensor(observation)[None], state)
            exported_token, exported_state = model(observation[None], exported_state)
            assert int(np.asarray(exported_token)[0]) == int(token[0])
            np.testing.assert_allclose(exported_state, state.numpy(), atol=1e-5)
            observation, _, done, _, _ = env.step(int(token[0]))
