"""A network neuroplug has never seen runs everywhere from its layer table alone.

``_HourglassNet`` is defined here and nowhere else: different slot names, activations,
padding and trunk sharing from the shipped MLP and Nature CNN. Declaring its layout and
layer table is all it does; the torch backend (dense and low-rank), the learners and the
Triton kernels must run it without knowing it exists.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"  # before any Triton kernel module is imported
from neuroplug_learners.appo import APPO
from neuroplug_learners.dqn import DQN, DQNConfig
from neuroplug_learners.ppo import PPO

from neuroplug.envs.spec import EnvSpec
from neuroplug.experiment.network_choice import network_names
from neuroplug.nets.layers import ACTIVATIONS, CONV2D, LINEAR, Layer
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.network import Network
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population
from neuroplug.testing import check_learner_contract, check_network_contract
from neuroplug.testing.algorithm_contract import ContractViolation


class _HourglassNet(Network):
    """Optionally a padded 3x3 ELU convolution, then a wide sigmoid layer, a narrow tanh
    bottleneck and a linear output; the critic reads the bottleneck (a shared trunk)."""

    critic_shares_trunk = True

    def __init__(self, input_shape: tuple[int, ...], output_size: int) -> None:
        self.input_shape = tuple(input_shape)
        self.output_size = output_size
        shapes: list[tuple[str, tuple[int, ...]]] = []
        layers = []
        width = input_shape[0]
        if len(input_shape) == 3:
            channels, height, breadth = input_shape
            shapes += [("stem.kernel", (8, channels, 3, 3)), ("stem.shift", (8,))]
            layers.append(Layer(CONV2D, "stem.kernel", "stem.shift", "elu", 2, (1, 1, 1, 1)))
            width = 8 * ((height - 1) // 2 + 1) * ((breadth - 1) // 2 + 1)
        for name, (fan_in, fan_out), activation in [
            ("wide", (width, 32), "sigmoid"),
            ("neck", (32, 6), "tanh"),
            ("logits", (6, output_size), "identity"),
        ]:
            shapes += [(f"{name}.matrix", (fan_in, fan_out)), (f"{name}.offset", (fan_out,))]
            layers.append(Layer(LINEAR, f"{name}.matrix", f"{name}.offset", activation))
        self.layout = ParameterLayout(shapes)
        self.layers = tuple(layers)

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        params = 0.3 * torch.randn(self.num_params, generator=generator)
        logits = self.layout.slots["logits.matrix"]
        params[logits.offset : logits.offset + logits.size] *= 0.05  # near-uniform actions
        return params

    def describe(self) -> str:
        return f"hourglass net on {self.input_shape}, {self.num_params:,} params"


def _hourglass(env: EnvSpec) -> Network:
    return _HourglassNet(env.obs_shape, env.num_actions)


@pytest.mark.parametrize("input_shape", [(5,), (2, 9, 9)], ids=["vectors", "frames"])
def test_a_new_network_runs_under_the_torch_backend_dense_and_low_rank(input_shape):
    # The contract runs the torch backend on dense, noise, GA, sigma, low-rank and fresh
    # populations against the network's own forward pass, member by member.
    network = _HourglassNet(input_shape, 3)
    check_network_contract(network)


@pytest.mark.parametrize(
    "learner, config",
    [
        (PPO, None),
        (APPO, None),
        (DQN, DQNConfig(name="dqn", learning_starts=64, batch_size=16)),
    ],
    ids=["ppo", "appo", "dqn"],
)
def test_a_new_network_trains_under_every_learner(learner, config):
    check_learner_contract(
        learner, config, segments=2, deterministic=learner is not APPO, network=_hourglass
    )


@pytest.mark.parametrize("mode", ["noise", "dense"])
@pytest.mark.parametrize("input_shape", [(5,), (2, 9, 9)], ids=["vectors", "frames"])
def test_a_new_network_runs_in_the_triton_kernels(input_shape, mode):
    pytest.importorskip("triton")
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig
    from neuroplug_triton.backend import TritonBackend, TritonBackendConfig

    network = _HourglassNet(input_shape, 3)
    generator = torch.Generator().manual_seed(2)
    population = Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(2)]),
        base_index=torch.tensor([0, 1, 0, 1]),
        scale=torch.tensor([0.05, -0.05, 0.02, 0.0]),
        seed=torch.tensor([3, 3, 8, 0]),
        lowrank=lowrank_for(network.layout, 2, 64) if mode == "noise" else None,
    )
    reference = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    triton = TritonBackend(TritonBackendConfig(name="triton", mode=mode), network)
    members = torch.tensor([2, 0, 3])
    inputs = network.example_inputs(3, generator)
    for backend in (reference, triton):
        backend.load(population)
    expected = reference.forward(members, inputs)
    got = triton.forward(members, inputs.to(triton.device)).cpu()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_a_network_is_a_net_type_by_its_entry_point_not_by_being_defined():
    # _HourglassNet subclasses Network in this file; only registered networks are net types.
    assert network_names() == [
        "causal_lm",
        "impala",
        "mlp",
        "module",
        "nature_cnn",
        "pretrained_lm",
        "transformer",
    ]


def test_a_layer_table_that_misses_a_slot_breaks_the_contract():
    network = _HourglassNet((5,), 3)
    network.layers = network.layers[1:]
    with pytest.raises(ContractViolation, match="every slot"):
        check_network_contract(network)


def test_an_unknown_layer_kind_or_activation_is_refused_with_what_is_known():
    with pytest.raises(ValueError, match="linear, conv2d, gru, lstm"):
        Layer("attention", "attn.w", "attn.b")
    with pytest.raises(ValueError, match="tanh"):
        Layer(LINEAR, "w", "b", "swish")


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_an_activation_computes_each_element_the_same_in_any_tensor(name):
    # CPU kernels run whole SIMD vectors and a scalar tail; an element must not round
    # differently in the tail (F.elu and torch.sigmoid did, so a member alone differed).
    values = 3 * torch.randn(4096, generator=torch.Generator().manual_seed(0))
    whole = ACTIVATIONS[name](values)
    pieces = torch.cat([ACTIVATIONS[name](values[i : i + 7].clone()) for i in range(0, 4095, 7)])
    assert torch.equal(pieces, whole[: len(pieces)])


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_the_tanh_and_sigmoid_are_exact_to_float32_and_differentiate_as_theirs(name):
    # Written with expm1 for speed and position independence, they must still be the
    # functions: within a few ulp of float64 over the whole range, saturating, and with
    # autograd's derivative that of tanh / the sigmoid.
    values = torch.linspace(-40, 40, 200_001)
    reference = {"tanh": torch.tanh, "sigmoid": torch.sigmoid}[name](values.double())
    computed = ACTIVATIONS[name](values)
    assert (computed.double() - reference).abs().max() < 3e-7
    assert computed[-1] == 1.0 and computed[0] == (-1.0 if name == "tanh" else 0.0)
    inputs = torch.linspace(-6, 6, 101, dtype=torch.float32, requires_grad=True)
    ACTIVATIONS[name](inputs).sum().backward()
    expected = torch.func.grad(
        lambda x: {"tanh": torch.tanh, "sigmoid": torch.sigmoid}[name](x).sum()
    )(inputs.detach().double())
    torch.testing.assert_close(inputs.grad.double(), expected, atol=1e-6, rtol=1e-5)


def test_a_members_step_on_few_inputs_is_its_own_product_whatever_the_batch():
    # Every layer below 8 inputs: each a sum of element-wise products in a fixed order,
    # so a member's outputs are the same bits alone or among 300 (MKL's batched product,
    # taken from 8 inputs up, is not on every CPU: docs/reproducibility.md).
    from neuroplug.nets.mlp import MLP

    network = MLP(4, [6, 5], 3, activation="tanh")
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(300)])
    params += 0.1 * torch.randn(params.shape, generator=generator)
    observations = torch.randn(300, 4, generator=generator)
    together = network.forward_population(params, observations)
    for member in (0, 7, 299):
        alone = network.forward_population(
            params[member : member + 1], observations[member : member + 1]
        )
        assert torch.equal(together[member : member + 1], alone)
        reference = network.forward_single(params[member], observations[member : member + 1])
        torch.testing.assert_close(alone, reference, rtol=1e-5, atol=1e-6)
