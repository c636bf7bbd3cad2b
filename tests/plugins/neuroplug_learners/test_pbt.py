"""algo=pbt: a population of learners acting in one forward, exploiting and exploring."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from neuroplug_learners.dqn import DQNConfig
from neuroplug_learners.pbt import PBT, PBTConfig

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.errors import ConfigError
from neuroplug.plugin_configs.presets import resolve
from neuroplug.testing import check_learner_contract
from neuroplug.training.components import build_env_and_network, learner_context


def _cartpole(hidden=(64, 64)):
    return build_env_and_network(
        EnvConfig(task_id="CartPole-v1"), NetConfig(hidden_sizes=list(hidden))
    )


def _population(config: PBTConfig, budget: int, seed: int = 0) -> PBT:
    env, network = _cartpole()
    context = learner_context(network, env, seed, budget, env_threads=1)
    settings, _ = resolve(config, context.env)
    return PBT(settings, context)


def test_pbt_honours_the_learner_contract():
    # Two PPO members, checkpointed and resumed exactly, the same run from the same seed.
    config = PBTConfig(name="pbt", members=2, member={"num_envs": 2}, interval_frames=64)
    check_learner_contract(PBT, config)


@pytest.mark.parametrize("learner", ["ppo", "appo"])
def test_a_population_of_recurrent_members_honours_the_learner_contract(learner):
    # Each member runs its own core on its envs' states in the population's one forward,
    # and learns by re-running it over its chunks (tests/rl/test_shards.py checks the
    # states a population's acting stores).
    def gru(env):
        return build_env_and_network(
            EnvConfig(task_id=env.task_id), NetConfig(hidden_sizes=[8], core="gru", core_size=8)
        )[1]

    config = PBTConfig(
        name="pbt", learner=learner, members=2, member={"num_envs": 2}, interval_frames=64
    )
    check_learner_contract(PBT, config, network=gru)


def test_the_whole_population_acts_in_one_forward_per_group_step(monkeypatch):
    calls = []
    population = _population(
        PBTConfig(name="pbt", members=4, member={"num_envs": 2}, segment_steps=256), 256
    )
    network = population.members[0].model.network
    original = type(network).forward_members

    def counted(self, params, inputs):
        calls.append((len(params), inputs.shape[1]))
        return original(self, params, inputs)

    monkeypatch.setattr(type(network), "forward_members", counted)
    try:
        population.train_segment()
    finally:
        population.close()
    # Actor and critic: every call runs all 4 members on their 2 envs each.
    assert calls and all(call == (4, 2) for call in calls)


def test_each_member_acts_with_its_own_weights():
    population = _population(PBTConfig(name="pbt", members=3, member={"num_envs": 2}), 1024)
    try:
        acting = population.rollout_loop.acting
        acting.refresh()
        observations = torch.randn(6, 4).to(population.device)
        generator = torch.Generator(population.device).manual_seed(0)
        values = acting.act(observations, slice(0, 6), None, generator).values
        for k, member in enumerate(population.members):
            _, expected = member.model(observations[2 * k : 2 * k + 2])
            torch.testing.assert_close(values[2 * k : 2 * k + 2], expected)
    finally:
        population.close()


def test_the_good_member_spreads_through_the_population():
    # One good member and three whose learning rate is far too small to learn in budget.
    # Without exploitation the test fails by construction: mutation alone moves a rate by
    # at most 1.5x a round, so 1e-7 cannot pass 1e-4 in the rounds this budget holds.
    config = PBTConfig(
        name="pbt",
        members=4,
        per_member={"learning_rate": [1e-3, 1e-7, 1e-7, 1e-7]},
        quantile=0.25,
        interval_frames=3000,
        mutate=["learning_rate"],
        device="cpu",  # the learning it asserts was seen with the CPU's arithmetic
    )
    budget = 4 * 36_000
    population = _population(config, budget)
    try:
        while population.env_steps < budget:
            population.train_segment()
    finally:
        population.close()
    objectives = population.objectives()
    rates = [member.config.learning_rate for member in population.members]
    # Every member now descends from the good one: its learning rate, and its skill.
    assert min(rates) > 1e-4, rates
    assert population.copies >= 3
    # Without the copies three members would still play at random (~20). Seeds 0-5
    # ended with every member at 140-470 and the best at 249-472.
    assert (objectives > 100).all(), objectives
    assert objectives.max() > 200, objectives


def test_a_round_copies_a_better_member_and_records_it():
    population = _population(
        PBTConfig(name="pbt", members=4, quantile=0.25, mutation_probability=0.0), 4096
    )
    try:
        population.recent[2].extend([200.0] * 3)
        population.recent[3].extend([10.0] * 3)
        population.recent[1].extend([100.0] * 3)
        population.members[2].config.learning_rate = 5e-3
        population.exploit_and_explore(frames=1000)
        worst = population.members[3]
        torch.testing.assert_close(worst.policy_params(), population.members[2].policy_params())
        assert worst.config.learning_rate == 5e-3
        (row,) = population.segment_tables()["lineage"]
        assert (row["member"], row["copied_from"]) == (3, 2)
        assert (row["learning_rate_old"], row["learning_rate_new"]) == (1e-3, 5e-3)
        # The copied member's old games no longer speak for it.
        assert np.isnan(population.objectives()[3])
        assert population.best_member() == 2
    finally:
        population.close()


def test_mutation_stays_within_the_declared_bounds():
    population = _population(
        PBTConfig(name="pbt", members=2, reference_member=False, mutation_probability=1.0), 4096
    )
    try:
        member = population.members[1]
        member.config.learning_rate = 0.9
        member.config.gamma = 0.9998
        population.mutating.append("gamma")
        for _ in range(20):
            population._explore(member)
            assert 1e-8 <= member.config.learning_rate <= 1.0
            assert 0.5 <= member.config.gamma <= 0.9999
    finally:
        population.close()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"members": 1}, "algo.members"),
        ({"learner": "nope"}, "algo.learner"),
        ({"learner": "pbt"}, "algo.learner"),
        ({"initial": {"learning_rate": [10.0, 20.0]}}, "algo.initial.learning_rate"),
        ({"initial": {"learning_rate": [0.0, 1e-3]}}, "algo.initial.learning_rate"),
        ({"initial": {"num_envs": [1, 2]}}, "algo.initial.num_envs"),
        ({"per_member": {"learning_rate": [1e-3]}}, "algo.per_member.learning_rate"),
        ({"mutate": ["epochs"]}, "algo.mutate"),
        ({"member": {"epochs": 0}}, "algo.member.epochs"),
        ({"member": {"bogus": 1}}, "algo.member.bogus"),
        ({"num_envs": 4}, "algo.num_envs"),
        ({"quantile": 0.8}, "algo.quantile"),
        ({"factor_low": 0.5}, "algo.factor_low"),
    ],
)
def test_bad_population_settings_fail_naming_the_field(changes, field):
    env, _ = _cartpole()
    config = dataclasses.replace(PBTConfig(name="pbt", members=4), **changes)
    with pytest.raises(ConfigError) as caught:
        resolve(config, env)
    assert str(caught.value).startswith(f"{field}:"), str(caught.value)


def test_a_learner_without_mutable_settings_cannot_be_a_member(monkeypatch):
    env, _ = _cartpole()
    monkeypatch.setattr(DQNConfig, "mutable", {})
    with pytest.raises(ConfigError, match="algo.learner: dqn declares no mutable settings"):
        resolve(PBTConfig(name="pbt", learner="dqn"), env)


def test_a_population_that_cannot_fit_in_memory_says_what_it_needs(monkeypatch):
    # On a machine of 16 GiB: 8 replay buffers of a million Pong frames need far more.
    monkeypatch.setattr("neuroplug.runtime.devices.available_memory_bytes", lambda: 16 * 2**30)
    env, _ = build_env_and_network(EnvConfig(task_id="Pong-v5"), NetConfig())
    config = PBTConfig(name="pbt", learner="dqn", members=8, member={"buffer_size": 1_000_000})
    with pytest.raises(ConfigError) as caught:
        resolve(config, env)
    message = str(caught.value)
    assert message.startswith("algo.members: 8 members of dqn need")
    assert "algo.member.buffer_size" in message


def test_a_population_run_records_its_lineage_and_resumes_with_each_row_once(compose, tmp_path):
    import csv

    from neuroplug.app import run_job
    from neuroplug.tools.plot import load_curves, member_series

    out = tmp_path / "run"
    overrides = [
        "algo=pbt",
        "algo.members=3",
        "algo.member.num_envs=2",  # no '+': the members' settings take any key
        "algo.member.segment_steps=256",
        "algo.interval_frames=128",
        "algo.mutation_probability=1.0",
        "logger=none",
        "run.eval_episodes=1",
        "run.stop_when_solved=false",
        f"run.output_dir={out}",
    ]
    run_job(compose([*overrides, "run.max_segments=2"]))
    lineage = list(csv.DictReader((out / "lineage.csv").open()))
    assert lineage and {row["segment"] for row in lineage} == {"1", "2"}
    # A crash after segment 3's rows were written but before its checkpoint: stale rows.
    with (out / "lineage.csv").open("a") as stream:
        stream.write("3,999,1,,0,," + "," * (2 * 5 - 1) + "\n")
    run_job(compose([*overrides, "run.max_segments=3", f"run.resume={out}"]))
    rows = list(csv.DictReader((out / "lineage.csv").open()))
    assert [row for row in rows if row["frames"] == "999"] == []
    assert {row["segment"] for row in rows} == {"1", "2", "3"}
    assert rows[: len(lineage)] == lineage
    metrics = list(csv.DictReader((out / "metrics.csv").open()))
    assert [row["segment"] for row in metrics] == ["1", "2", "3"]
    (curve,) = load_curves([out])
    assert set(member_series(curve)["learning_rate"]) == {0, 1, 2}
    assert (out / "checkpoints" / "best_policy.pt").is_file()


@pytest.mark.kernels
def test_a_members_acting_does_not_depend_on_its_companions():
    # The same company with other weights: the same values, bit for bit (the critic's
    # one-column layer included), so the same rollout. One member per group instead:
    # to rounding (the batched product's shape changes; docs/reproducibility.md).
    env, network = _cartpole()
    critic = network.resized(1)
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([critic.initial_params(generator) for _ in range(3)])
    inputs = torch.randn(3, 8, 4, generator=generator)
    together = critic.forward_members(params, inputs)
    others = params.clone()
    others[1:] += 0.1 * torch.randn(2, params.shape[1], generator=generator)
    assert torch.equal(critic.forward_members(others, inputs)[0], together[0])
    for k in range(3):
        alone = critic.forward_members(params[k : k + 1], inputs[k : k + 1])
        torch.testing.assert_close(alone[0], together[k], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("learner", ["ppo", "appo", "dqn", "td3", "sac"])
def test_every_first_party_learner_can_be_a_population_member(learner):
    from neuroplug_learners.appo import APPO
    from neuroplug_learners.dqn import DQN
    from neuroplug_learners.ppo import PPO
    from neuroplug_learners.sac import SAC
    from neuroplug_learners.sac_config import SACConfig
    from neuroplug_learners.td3 import TD3
    from neuroplug_learners.td3_config import TD3Config

    from neuroplug.testing import check_population_member

    classes = {"ppo": PPO, "appo": APPO, "dqn": DQN, "td3": TD3, "sac": SAC}
    small = {"learning_starts": 64, "batch_size": 16}
    configs = {
        "dqn": DQNConfig(name="dqn", **small),
        "td3": TD3Config(name="td3", critic_hidden=[16], **small),
        "sac": SACConfig(name="sac", critic_hidden=[16], **small),
    }
    task = "Pendulum-v1" if learner in ("td3", "sac") else "CartPole-v1"
    check_population_member(classes[learner], configs.get(learner), task=task)


TEAMS = [
    "algo=pbt",
    "algo.learner=ppo",
    "algo.members=3",
    "algo.member.num_envs=6",  # two worlds of two guards and a runner a member
    "env=gymnasium",
    "env.id=null",
    "env.parallel_env=parallel_worlds:roles",
    "env.policy_mapping=per_team",
    "logger=none",
]


def test_with_a_policy_per_team_each_policys_learners_rank_and_copy_among_themselves(
    compose, tmp_path
):
    pytest.importorskip("pettingzoo")
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.training.components import build_components

    config = compose([*TEAMS, "algo.quantile=0.34", "algo.mutation_probability=0.0",
                      f"run.output_dir={tmp_path}"])  # fmt: skip
    population = build_components(typed_experiment(config)).algorithm
    try:
        # Learner i: member i // 2's guard (even) or runner (odd) policy.
        assert [m.config.num_envs for m in population.members] == [4, 2] * 3
        assert "each member a learner per policy, 2 policies: guard" in population.describe()
        owners = population.rollout_loop.lane_owners
        assert owners.tolist() == [0, 0, 1, 0, 0, 1, 2, 2, 3, 2, 2, 3, 4, 4, 5, 4, 4, 5]
        # Guards: member 2 best, member 1 worst; runners: member 1 best, member 2 worst.
        for learner, score in {0: 5.0, 2: 1.0, 4: 9.0, 1: 5.0, 3: 9.0, 5: 1.0}.items():
            population.recent[learner].extend([score] * 3)
        population.exploit_and_explore(frames=1000)
        members = population.members
        torch.testing.assert_close(members[2].policy_params(), members[4].policy_params())
        torch.testing.assert_close(members[5].policy_params(), members[3].policy_params())
        rows = population.segment_tables()["lineage"]
        copied = {(row["member"], row["policy"], row["copied_from"]) for row in rows}
        assert copied == {(1, "guard", 2), (2, "runner", 1)}
        # The deployed policies: each policy's best member's (the guards' member 2 copied
        # into member 1 has no game yet).
        deployed = population.policy_params()
        assert deployed.shape[0] == 2
        assert torch.equal(deployed[0], members[4].policy_params())
        assert torch.equal(deployed[1], members[3].policy_params())
        stats = population.segment_stats()
        assert stats["policy/guard/best_member"] == 2 and stats["policy/runner/best_member"] == 1
        assert "member4/objective" not in stats  # each learner named by member and policy
        assert stats["member2/guard/objective"] == 9.0
    finally:
        population.close()


def test_a_population_per_team_runs_evaluates_each_policy_and_deploys_them_all(compose, tmp_path):
    import csv

    pytest.importorskip("pettingzoo")
    from neuroplug.app import run_job
    from neuroplug.training.policy_file import read_policy_file

    run_job(
        compose([*TEAMS, "algo.interval_frames=300", "algo.start_frames=0",
                 "algo.mutation_probability=1.0", "run.max_frames=3000", "run.eval_interval=2",
                 "run.eval_episodes=2", f"run.output_dir={tmp_path}"])
    )  # fmt: skip
    lineage = list(csv.DictReader((tmp_path / "lineage.csv").open()))
    assert lineage and {row["policy"] for row in lineage} == {"guard", "runner"}
    last = list(csv.DictReader((tmp_path / "metrics.csv").open()))[-1]
    assert last["eval/guard/return_mean"] and last["eval/runner/return_mean"]
    policy = read_policy_file(tmp_path / "checkpoints" / "best_policy.pt")
    assert policy.policy_params.shape[0] == 2
