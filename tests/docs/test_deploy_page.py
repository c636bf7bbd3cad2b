"""docs/deploy.md's examples run as written, on a run the test trains: the five-line load,
the exported ONNX policy playing an episode in a plain gymnasium loop, TorchScript's line
and the shared folder loaded back."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from neuroplug.app import run_job
from neuroplug.tools import export, share
from neuroplug.tools.watch import watch

PAGE = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
RUN = "runs/cartpole-es"
"""The run dir the page's examples name."""


def _blocks(containing: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return next(block for block in blocks if containing in block)


@pytest.fixture(scope="module")
def run_dir(compose, tmp_path_factory):
    folder = tmp_path_factory.mktemp("deploy") / "runs" / "cartpole-es"
    overrides = ["algo=es", "logger=none", "algo.population_size=8", "run.max_generations=3"]
    run_job(compose([*overrides, "net.hidden_sizes=[8]", f"run.output_dir={folder}"]))
    return folder


def _run(code: str, run_dir: Path) -> dict:
    scope: dict = {}
    exec(compile(code.replace(RUN, str(run_dir)), str(PAGE), "exec"), scope)
    return scope


def test_the_five_line_example_loads_and_acts(run_dir):
    scope = _run(_blocks('neuroplug.load_policy("runs/'), run_dir)
    assert isinstance(scope["policy"], torch.nn.Module)
    assert scope["action"] in (0, 1)


def test_the_exported_policy_plays_an_episode_in_a_gymnasium_loop(run_dir, capsys):
    pytest.importorskip("onnxruntime", reason="ONNX export needs neuroplug[export]")
    export.main([str(run_dir), "--format", "onnx"])
    assert "checked against the policy" in capsys.readouterr().out
    scope = _run(_blocks("onnxruntime.InferenceSession"), run_dir)
    # The same episode played by the loaded module: the same return.
    import gymnasium as gym

    policy = scope.get("policy") or _run(_blocks('neuroplug.load_policy("runs/'), run_dir)["policy"]
    env = gym.make("CartPole-v1")
    observation, _ = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, _ = env.step(int(policy(observation)))
        total += reward
        done = terminated or truncated
    assert scope["episode_return"] == total > 0


def test_torchscripts_line_acts_as_the_policy(run_dir):
    export.main([str(run_dir), "--format", "torchscript"])
    model = torch.jit.load(str(run_dir / "exported" / "policy_torchscript.pt"))
    policy = _run(_blocks('neuroplug.load_policy("runs/'), run_dir)["policy"]
    observations = torch.randn(5, 4)
    assert torch.equal(model(observations), policy(observations))


def test_a_shared_folder_loads_back_and_watch_scores_it_as_the_run(run_dir, tmp_path):
    folder = share.share(run_dir, tmp_path / "shared", episodes=3, video=False)
    names = {path.name for path in folder.iterdir()}
    assert {
        "README.md",
        "policy.pt",
        "config.yaml",
        "results.json",
        "policy_torchscript.pt",
    } <= names
    import neuroplug

    policy = neuroplug.load_policy(folder)
    observations = torch.randn(6, 4)
    assert torch.equal(policy(observations), neuroplug.load_policy(run_dir)(observations))
    on_run = watch(run_dir, episodes=3, video=False)
    on_shared = watch(folder, episodes=3, video=False)
    on_exported = watch(folder / "policy_torchscript.pt", episodes=3, video=False)
    assert np.array_equal(on_run.returns, on_shared.returns)
    assert np.array_equal(on_run.returns, on_exported.returns)
    card = (folder / "README.md").read_text()
    assert "library_name: neuroplug" in card and "mean_reward" in card
    assert f"{on_run.returns.mean():.2f} +/- {on_run.returns.std():.2f}" in card
    assert "python -m neuroplug" in card and "algo=es" in card
