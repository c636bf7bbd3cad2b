"""One policy learning for every agent of a multi-agent world (``env.policy_mapping=
shared``): a learner's envs are whole worlds, its policy told each agent's role."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("pettingzoo")

from neuroplug.app import run_job  # noqa: E402
from neuroplug.tools.watch import watch  # noqa: E402

WORLD = ["env=gymnasium", "env.id=null", "env.parallel_env=parallel_worlds:roles"]


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_a_shared_policy_learns_what_each_role_is_rewarded_for(algo, compose, tmp_path):
    """Guards are rewarded for action 1, runners for action 2: a policy that ignored the
    role in its observation could score at most 2/3 of the 5 a step could give."""
    summary = run_job(
        compose(
            [
                f"algo={algo}",
                *WORLD,
                "algo.num_envs=9",
                "run.max_frames=12000",
                "run.eval_episodes=4",
                "logger=console",
                f"run.output_dir={tmp_path}",
            ]
        )  # fmt: skip
    )
    assert summary["eval_return_mean"] >= 4.5  # the role read: blind, 10/3 at best
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    # Every agent's episode counts (3 a world), and a world's steps are its agents'.
    assert int(rows[-1]["episodes"]) % 3 == 0 and int(rows[-1]["frames"]) >= 12000


def test_an_agent_that_leaves_early_is_learned_and_scored_to_its_leaving(compose, tmp_path):
    """The runner leaves a step before the guards (``early``): its episode ends with its
    world's, so its return is what it earned (4 of 5 steps) and a world's three episodes
    count as three."""
    summary = run_job(
        compose(
            ["algo=ppo", *WORLD, "+env.kwargs.early=true", "algo.num_envs=9",
             "run.max_frames=12000", "run.eval_episodes=6", "logger=console",
             f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    # Learned (a policy blind to roles: 10/3 at best); at most the runner's 4 and 5 a guard.
    assert 4.0 <= summary["eval_return_mean"] <= (5 + 5 + 4) / 3
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    assert int(rows[-1]["episodes"]) % 3 == 0


def test_a_learner_is_paid_the_reward_and_every_return_counts_the_score(compose, tmp_path):
    """Every agent paid for action 0 (``paid_for``), which no role's score rewards: the
    learner learns what it is paid, and its training and evaluation returns count the
    world's scores (a return of the rewards would be near 5), what it was paid logged
    beside them."""
    summary = run_job(
        compose(
            ["algo=ppo", *WORLD, "+env.kwargs.paid_for=0", "algo.num_envs=9",
             "run.max_frames=12000", "run.eval_episodes=4", "logger=console",
             f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    assert summary["eval_return_mean"] <= 0.5  # action 0 learned: no role's score
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    assert float(rows[-1]["return_mean"]) <= 1.0
    assert float(rows[-1]["algo/trained_return_mean"]) >= 4.0  # what it was paid: near 5


def test_watch_plays_whole_worlds_and_names_each_agent(compose, tmp_path, capsys):
    overrides = [*WORLD, "algo=ppo", "algo.num_envs=3", "run.max_frames=600"]
    run_job(compose([*overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    played = watch(tmp_path, episodes=2, video=False)
    assert len(played.returns) == 6  # two worlds of three agents
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("episode")]
    assert [line.split()[-1] for line in shown] == ["guard_0", "guard_1", "runner_0"] * 2
    assert [line.split()[-2] for line in shown] == ["0", "0", "0", "1", "1", "1"]


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_a_policy_reads_the_measurements_beside_its_frames(algo, compose, tmp_path):
    """Each agent sees noise and a gauge (a Dict observation of a screen and a number):
    rewarded for action 1 when the gauge reads above 5. The screen tells nothing, so a
    policy scores above half of the 5 a step gives only by reading the gauge, packed below
    the pixels and joined to the Nature CNN's 512 units."""
    summary = run_job(
        compose(
            [f"algo={algo}", "env=gymnasium", "env.id=null",
             "env.parallel_env=parallel_worlds:gauges", "algo.num_envs=8",
             "run.max_frames=40000", "run.eval_episodes=8", "logger=none",
             f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    assert summary["eval_return_mean"] >= 4.0  # blind to the gauge: 2.5 expected
    if algo != "ppo":
        return
    # The policy leaves neuroplug reading them: its file rebuilds the join, and the module
    # takes the env's Dict observations (a batch here, and one) as it takes packed frames.
    import numpy as np

    from neuroplug.deploy.loading import load_policy

    policy = load_policy(tmp_path)
    screens = np.random.default_rng(0).integers(0, 256, (20, 36, 36, 1), dtype=np.uint8)
    gauges = np.linspace(0.25, 9.75, 20)
    actions = np.asarray(policy({"screen": screens, "gauge": gauges[:, None]}))
    packed = policy.measurement_layout.pack({"screen": screens[3], "gauge": gauges[3:4]})
    assert int(policy({"screen": screens[3], "gauge": gauges[3:4]})) == actions[3]
    assert int(policy(packed)) == actions[3]
    from neuroplug.deploy.policy_module import PolicyInputError

    with pytest.raises(PolicyInputError, match="without gauge.*reads screen, gauge"):
        policy({"screen": screens[3]})
    # Exported, it takes packed frames of any batch (checked against the policy there).
    from neuroplug.tools.export import main as export

    export([str(tmp_path), "--format", "torchscript"])
    assert (tmp_path / "exported" / "policy_torchscript.pt").is_file()
    assert (actions == (gauges > 5)).mean() >= 0.8
