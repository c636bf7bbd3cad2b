"""A policy per team or per agent (``env.policy_mapping``): each learns from its own agents'
lanes, they act in one forward, the deployed file holds them all, and each can leave."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import neuroplug  # noqa: E402
from neuroplug.app import run_job  # noqa: E402
from neuroplug.envs.multi_agent.mapping import policy_mapping  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.tools.export import export  # noqa: E402
from neuroplug.tools.watch import watch  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402
from neuroplug.training.policy_file import read_policy_file  # noqa: E402
from neuroplug.training.policy_sources import PolicySourceError  # noqa: E402

WORLD = ["env=gymnasium", "env.id=null", "env.parallel_env=parallel_worlds:roles"]
LOOKALIKES = [*WORLD, "env.kwargs.guards=3", "env.kwargs.runners=0", "env.kwargs.own=true"]
"""Three guards that look alike, each rewarded for its own action (0, 1, 2)."""


def test_mappings_give_every_agent_its_policy():
    agents = ("adversary_0", "adversary_1", "agent_0")
    team = policy_mapping(agents, "per_team")
    assert team.names == ("adversary", "agent") and team.of_agent == (0, 0, 1)
    assert team.lane_policies(6).tolist() == [0, 0, 1, 0, 0, 1]  # worlds stay whole
    assert [lanes.tolist() for lanes in team.lanes(6)] == [[0, 1, 3, 4], [2, 5]]
    assert policy_mapping(agents, "per_agent").of_agent == (0, 1, 2)
    mine = policy_mapping(agents, {"adversary": "chasers", "agent_0": "runner"})
    assert mine.names == ("chasers", "runner") and mine.agents_of(0) == (0, 1)
    # An agent's own name wins over its role's.
    mine = policy_mapping(agents, {"adversary": "chasers", "adversary_1": "lone", "agent": "a"})
    assert mine.names == ("chasers", "lone", "a") and mine.of_agent == (0, 1, 2)
    with pytest.raises(ConfigError, match="agent_0 has no policy"):
        policy_mapping(agents, {"adversary": "chasers"})
    with pytest.raises(ConfigError, match="goalie is no agent or role"):
        policy_mapping(agents, {"goalie": "x", "adversary": "y", "agent": "z"})


def test_agents_that_look_alike_learn_apart_with_a_policy_each(compose, tmp_path):
    """Each guard is rewarded 1 a step for its own action: one shared policy, which cannot
    tell them apart, scores at most 5/3 a guard; a policy each learns all 5."""
    summary = run_job(
        compose(
            [
                "algo=ppo",
                *LOOKALIKES,
                "env.policy_mapping=per_agent",
                "algo.num_envs=12",
                "run.max_frames=15000",
                "run.eval_episodes=4",
                "logger=console",
                f"run.output_dir={tmp_path}",
            ]
        )  # fmt: skip
    )
    assert summary["eval_return_mean"] >= 4.5
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    for guard in ("guard_0", "guard_1", "guard_2"):
        assert float(rows[-1][f"eval/{guard}/return_mean"]) >= 4.0
        assert f"algo/policy/{guard}/return_mean" in rows[-1]
    record = read_policy_file(tmp_path / "checkpoints" / "best_policy.pt")
    assert record.policy_params.shape[0] == 3
    assert record.env["policies"] == ["guard_0", "guard_1", "guard_2"]
    # Each leaves alone, and acts as it learned: guard_2's policy picks action 2.
    policy = neuroplug.load_policy(tmp_path, policy="guard_2")
    observations = torch.rand(64, *policy.obs_shape) * 2 - 1
    assert (policy(observations) == 2).float().mean() > 0.9
    with pytest.raises(PolicySourceError, match="holds 3 policies: guard_0"):
        neuroplug.load_policy(tmp_path)


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_teams_of_unequal_sizes_each_learn_from_their_own_lanes(algo, compose, tmp_path):
    config = compose(
        [f"algo={algo}", *WORLD, "env.policy_mapping=per_team", "algo.num_envs=6",
         "logger=none", f"run.output_dir={tmp_path}"]
    )  # fmt: skip
    learner = build_components(typed_experiment(config)).algorithm
    guards, runners = learner.members
    seen = {0: [], 1: []}
    for k, member in enumerate(learner.members):
        learn = member.learn_rollout
        member.learn_rollout = lambda rollout, k=k, learn=learn: (
            seen[k].append(rollout.observations.clone()) or learn(rollout)
        )
    before = [member.policy_params().clone() for member in learner.members]
    segment = learner.train_segment()
    learner.close()
    assert guards.config.num_envs == 4 and runners.config.num_envs == 2  # 2 worlds
    # Each policy saw its own agents alone: the role's one-hot closes each observation.
    guard_rows = torch.cat([obs.reshape(-1, obs.shape[-1]) for obs in seen[0]])
    runner_rows = torch.cat([obs.reshape(-1, obs.shape[-1]) for obs in seen[1]])
    assert (guard_rows[:, -2:] == torch.tensor([1.0, 0.0])).all()
    assert (runner_rows[:, -2:] == torch.tensor([0.0, 1.0])).all()
    assert guards.env_steps == 2 * runners.env_steps  # twice the lanes
    for member, initial in zip(learner.members, before, strict=True):
        assert not torch.equal(member.policy_params(), initial)
    assert set(segment.stats) >= {"policy/guard/return_mean", "policy/runner/return_mean"}


def test_an_evaluation_plays_the_worlds_a_shared_policy_would(compose, tmp_path, capsys):
    common = [*WORLD, "algo=ppo", "algo.num_envs=6", "run.max_frames=600", "logger=none"]
    shared, mapped = tmp_path / "shared", tmp_path / "mapped"
    run_job(compose([*common, f"run.output_dir={shared}"]))
    run_job(compose([*common, "env.policy_mapping=per_team", f"run.output_dir={mapped}"]))
    one, both = watch(shared, episodes=3, video=False), watch(mapped, episodes=3, video=False)
    assert len(both.returns) == 9  # three worlds of three agents
    assert np.array_equal(one.seeds, both.seeds)  # the same worlds, not one world thrice
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("episode")]
    assert shown[-3:][0].endswith("guard_0 (guard)") and shown[-1].endswith("runner_0 (runner)")


def test_a_resumed_run_continues_every_policy(compose, tmp_path):
    run = ["algo=ppo", *WORLD, "env.policy_mapping=per_agent", "algo.num_envs=6",
           "algo.segment_steps=300", "run.checkpoint_interval=1", "logger=none"]  # fmt: skip
    run_job(compose([*run, "run.max_segments=2", f"run.output_dir={tmp_path}"]))
    saved = load_checkpoint(tmp_path)["algorithm"]
    assert len(saved["members"]) == 3
    summary = run_job(compose([*run, "run.max_segments=3", f"run.resume={tmp_path}"]))
    assert summary["segment"] == 3
    resumed = load_checkpoint(tmp_path)["algorithm"]
    for before, after in zip(saved["members"], resumed["members"], strict=True):
        assert after["env_steps"] > before["env_steps"]  # each went on from its own count


def test_export_takes_one_policy_of_several(compose, tmp_path):
    run = ["algo=ppo", *WORLD, "env.policy_mapping=per_team", "algo.num_envs=3"]
    run_job(compose([*run, "run.max_frames=300", "logger=none", f"run.output_dir={tmp_path}"]))
    exported = export(tmp_path, "torchscript", policy="runner_0")
    assert exported.path == tmp_path / "exported" / "runner" / exported.path.name
    with pytest.raises(PolicySourceError, match="name one with policy="):
        export(tmp_path, "torchscript")


def test_each_policy_is_evaluated_against_a_bot_on_its_own_agents(compose, tmp_path):
    """``selfplay.eval_opponent`` without the pool: each paddle's policy plays the bot on its
    own seat, the games ``tools.match --policy`` plays at the evaluation's seeds."""
    from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
    from neuroplug.tools.match import match

    bot = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
    run_job(
        compose(
            ["algo=ppo", "env=pong_duel", "env.policy_mapping=per_agent", "algo.num_envs=4",
             "run.max_frames=1000", f"selfplay.eval_opponent={bot}", "run.eval_episodes=4",
             "logger=none", f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    row = list(csv.DictReader((tmp_path / "metrics.csv").open()))[-1]
    completed = int(row["segment"])
    for paddle in ("paddle_0", "paddle_1"):
        played = match(
            tmp_path, bot, games=4, seed=EVALUATION_GENERATION_OFFSET + completed, policy=paddle
        )
        assert float(row[f"eval/{paddle}/win_rate"]) == played.score_rate
