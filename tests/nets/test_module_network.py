"""net.type=module: a torch.nn.Module of the user's own (tests/support/residual_net.py) as a
population: batched over members, trained by evolution, refused where it cannot run."""

from __future__ import annotations

import csv

import pytest
import torch
from neuroplug_learners.dqn import DQN
from neuroplug_learners.dqn_config import DQNConfig
from neuroplug_learners.ppo import PPO
from residual_net import RecurrentEncoder, ResidualMLP

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.population.members import Population
from neuroplug.testing import check_learner_contract, check_network_contract

MODULE = ["net.type=module", "net.module=residual_net:ResidualMLP", "net.kwargs.width=16"]


def _timing(column: str) -> bool:
    """Columns that time the run (they differ between two runs of one seed)."""
    return column.startswith("time_") or "second" in column or column == "elapsed"


def _metrics(run_dir) -> list[dict]:
    with (run_dir / "metrics.csv").open() as stream:
        return [
            {key: value for key, value in row.items() if not _timing(key)}
            for row in csv.DictReader(stream)
        ]


def test_a_population_of_a_module_is_one_call_that_agrees_with_each_member_alone():
    network = ModuleNetwork(ResidualMLP, (4,), 2, {"width": 8, "blocks": 2})
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(5)])
    assert not torch.equal(params[0], params[1])  # fresh members differ
    inputs = torch.randn(5, 4, generator=generator)
    together = network.forward_population(params, inputs)
    alone = torch.cat([network.forward_single(params[i], inputs[i : i + 1]) for i in range(5)])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)
    members = network.forward_members(params[:2], inputs.reshape(1, 5, 4).expand(2, 5, 4))
    torch.testing.assert_close(members[1], network.forward_single(params[1], inputs))
    assert network.layout.num_params == sum(
        tensor.numel() for tensor in ResidualMLP((4,), 2, width=8, blocks=2).parameters()
    )


@pytest.mark.parametrize(
    ("module", "features"), [(ResidualMLP, 0), (ResidualMLP, 6), (RecurrentEncoder, 5)]
)
def test_a_module_network_honours_the_network_contract(module, features):
    check_network_contract(ModuleNetwork(module, (4,), 2, {"width": 8}, features=features))


def test_an_encoder_module_feeds_neuroplugs_head_and_shares_its_trunk():
    network = ModuleNetwork(ResidualMLP, (4,), 3, {"width": 8}, features=6)
    assert network.critic_shares_trunk and network.feature_size == 6
    assert list(network.layout.slots)[-2:] == ["head.weight", "head.bias"]
    assert network.layout.slots["head.weight"].shape == (3, 6)
    params = network.initial_params(torch.Generator().manual_seed(0))
    inputs = torch.randn(7, 4)
    features = network.features(params, inputs)
    assert features.shape == (7, 6)
    torch.testing.assert_close(
        network.forward_single(params, inputs), network.head(params, features)
    )


def test_a_recurrent_module_carries_each_members_state_and_restarts_from_zeros():
    network = ModuleNetwork(RecurrentEncoder, (3,), 2, features=4)
    assert network.state_size == 4
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(3)])
    steps = torch.randn(2, 3, 3, generator=generator)
    state = torch.zeros(3, 4)
    for step in steps:
        outputs, state = network.forward_population_with_state(params, step, state)
    # Member 1 alone, two steps from zeros, reaches the same outputs and state.
    alone = None
    for step in steps:
        features, alone = network.features_with_state(params[1], step[1:2], alone)
    torch.testing.assert_close(state[1:2], alone)
    torch.testing.assert_close(outputs[1:2], network.head(params[1], features))
    # From zeros again, the first step's outputs come back: the state is all it remembers.
    first, _ = network.forward_population_with_state(params, steps[0], torch.zeros(3, 4))
    assert not torch.allclose(first, outputs)


@pytest.mark.parametrize("algo", ["es", "ga"])
def test_evolution_trains_a_module_and_the_same_seed_repeats(algo, compose, tmp_path):
    overrides = [
        f"algo={algo}",
        "env=cartpole",
        *MODULE,
        "algo.population_size=8",
        *(["algo.truncation=2"] if algo == "ga" else []),
        "run.max_generations=2",
        "run.eval_episodes=2",
        "logger=none",
    ]
    runs = []
    for name in ("a", "b"):
        summary = run_job(compose([*overrides, f"run.output_dir={tmp_path / name}"]))
        assert summary["frames"] > 0
        runs.append(_metrics(tmp_path / name))
    assert runs[0] == runs[1] and len(runs[0]) == 2


@pytest.mark.parametrize(
    ("learner", "config"),
    [(PPO, None), (DQN, DQNConfig(name="dqn", learning_starts=64, batch_size=16))],
)
def test_learners_honour_their_contract_with_a_module_network(learner, config):
    check_learner_contract(
        learner,
        config,
        network=lambda env: ModuleNetwork(ResidualMLP, env.obs_shape, env.num_actions),
    )


@pytest.mark.parametrize(("module", "features"), [(ResidualMLP, 8), (RecurrentEncoder, 8)])
def test_ppo_honours_its_contract_with_a_module_encoder(module, features):
    check_learner_contract(
        PPO,
        None,
        network=lambda env: ModuleNetwork(
            module, env.obs_shape, env.num_actions, features=features
        ),
    )


def test_ppo_solves_cartpole_with_a_module_network(compose, tmp_path):
    # The policy is the module; the critic a second one of one output (as for the MLP).
    summary = run_job(
        compose(
            [
                "+experiment=ppo_cartpole",
                *MODULE[:2],
                "net.kwargs.width=64",
                "run.max_frames=80000",
                "run.eval_interval=3",
                "logger=none",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    assert summary["eval_return_mean"] >= 475, summary


def test_a_recurrent_module_learns_cartpole_without_velocities_where_a_feed_forward_one_cannot(
    compose, tmp_path
):
    # The velocities hidden, the policy must remember positions: a recurrent module of the
    # user's own (a GRU written with linear layers) as the encoder, its state carried by
    # the sampler and trained through chunks of steps, as the GRU core is. Seed 1
    # (2026-11-27, Zen 5 EPYC): solved (500) at 20k frames; the feed-forward module ~45.
    masked = ["+experiment=ppo_cartpole", "env.observation_mask=[1,3]", "net.type=module"]
    budget = ["net.features=64", "net.kwargs.width=64", "run.max_frames=40000", "run.seed=1"]
    returns = {}
    for module in ("RecurrentEncoder", "ResidualMLP"):
        overrides = [*masked, *budget, f"net.module=residual_net:{module}", "logger=none"]
        overrides.append(f"run.output_dir={tmp_path / module}")
        returns[module] = run_job(compose(overrides))["eval_return_mean"]
    assert returns["RecurrentEncoder"] > 150 and returns["ResidualMLP"] < 80, returns


def test_low_rank_noise_moves_a_modules_linear_weights_by_low_rank_products():
    # EGGROLL on a module: its nn.Linear weights big enough move by rank-1 products, the
    # rest (biases, LayerNorm, small matrices) by dense noise.
    from neuroplug.population.lowrank import lowrank_for, perturbation_vectors

    network = ModuleNetwork(ResidualMLP, (4,), 3, {"width": 16}, features=8)
    lowrank = lowrank_for(network.layout, rank=1, min_size=100)
    chosen = {name for name, slot in network.layout.slots.items() if lowrank.matrix_at(slot.offset)}
    assert chosen == {"encoder.blocks.0.1.weight", "encoder.head.weight"}
    directions = perturbation_vectors(torch.tensor([3, 4]), network.num_params, lowrank)
    for name, moved in network.layout.split(directions[0]).items():
        if name in chosen:
            assert torch.linalg.matrix_rank(moved) == 1, name
        elif moved.dim() == 2:
            assert torch.linalg.matrix_rank(moved) > 1, name


def test_population_members_are_its_flat_parameters(compose):
    network = ModuleNetwork(ResidualMLP, (4,), 2)
    population = Population.dense(
        torch.stack([network.initial_params(torch.Generator().manual_seed(s)) for s in (1, 2)])
    )
    assert population.materialize().shape == (2, network.num_params)


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["net.module=no_such_package.nets:Net"], "net.module", "does not import"),
        (["net.module=residual_net.ResidualMLP"], "net.module", "colon"),
        (["net.module=residual_net:NOT_A_MODULE"], "net.module", "not a torch.nn.Module"),
        (["net.module=residual_net:ResidualMLP", "net.kwargs.depth=2"], "net.kwargs", "width"),
        (  # the constructor as written, its return annotation left out
            ["net.module=torch.nn:Linear"],
            "net.kwargs",
            r"torch.nn:Linear\(in_features: int, out_features: int, bias: bool = True, "
            r"device=None, dtype=None\) refused \(observation_shape=\(4,\), outputs=2\)",
        ),
        (["net.module=residual_net:OneOutput"], "net.module", r"expected \(2, 2\)"),
        (["net.module=residual_net:WithRunningStatistics"], "net.module", "buffers"),
        (["net.module=residual_net:ResidualMLP", "net.core=gru"], "net.core", "layer-table"),
        (  # a recurrent whole policy is evolution's: a learner needs an encoder
            ["net.module=residual_net:RecurrentEncoder", "algo=ppo"],
            "net.features",
            "recurrent whole policy",
        ),
        (["net.module=residual_net:OneOutput", "net.features=4"], "net.module", r"\(2, 4\)"),
        (["net.module=residual_net:ResidualMLP", "net.features=-1"], "net.features", "got -1"),
        (["net.module=residual_net:ResidualMLP", "backend=triton"], "backend", "backend=torch"),
        (
            ["net.module=residual_net:ResidualMLP", "algo=ppo", "algo.encoder_precision=bfloat16"],
            "algo.encoder_precision",
            "separate actor and critic",
        ),
    ],
)
def test_bad_module_input_fails_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(
            compose(
                [
                    "algo=es",
                    "env=cartpole",
                    "net.type=module",
                    *overrides,
                    "logger=none",
                    f"run.output_dir={tmp_path}",
                ]
            )
        )
    assert raised.value.field == field
    assert "\n" not in str(raised.value)
