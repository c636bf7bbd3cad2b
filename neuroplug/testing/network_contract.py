"""The contract every network honours, checked on its own layer table and the torch backend.

Use it from the tests of a new architecture::

    from neuroplug.testing import check_network_contract

    def test_my_network_honours_the_contract():
        check_network_contract(MyNetwork(...))

It checks that the layer table (:attr:`neuroplug.nets.network.Network.layers`), where the
network has one, names each slot of the layout once, with the shapes its layer kind takes
(a network without one, ``net.type=module``, runs its own forwards); that ``initial_params``
gives a finite ``(D,)`` vector, the same for the same generator seed; that the batched
forward of different members matches each member's :meth:`forward_single`, whose outputs
are ``(b, output_size)``; that :meth:`features` and :meth:`head` compose to the forward
pass (with a layer table or a shared trunk), with ``feature_size`` features, and that a
population of learners' trunks (:meth:`features_members_with_state`, :meth:`head_members`)
matches them member by member, carrying a recurrent state from step to step; that a
network without a shared trunk can be ``resized`` for a critic; and that the torch backend runs it, dense and low-rank, to the
backend contract (:func:`neuroplug.testing.check_backend_contract`). Learners then run it
too: pass it to :func:`neuroplug.testing.check_learner_contract` (``network=``).
"""

from __future__ import annotations

import torch

from neuroplug import registry
from neuroplug.nets.cells import load_core
from neuroplug.nets.layers import CONV2D, is_recurrent
from neuroplug.nets.network import Network
from neuroplug.testing.algorithm_contract import ContractViolation
from neuroplug.testing.backend_contract import check_backend_contract


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def _check_table(network: Network) -> None:
    name = type(network).__name__
    slots = network.layout.slots
    used = [
        slot
        for layer in network.layers
        for slot in (layer.weight, layer.bias, layer.recurrent_weight, layer.recurrent_bias)
        if slot
    ]
    _require(
        sorted(used) == sorted(slots),
        f"{name}: the layers must name every slot of the layout once (layers name "
        f"{sorted(used)}, the layout has {sorted(slots)})",
    )
    for layer in network.layers:
        weight, bias = slots[layer.weight].shape, slots[layer.bias].shape
        dims, outputs = (4, weight[0]) if layer.kind == CONV2D else (2, weight[-1])
        _require(
            len(weight) == dims and bias == (outputs,),
            f"{name}: a {layer.kind} layer takes a {dims}-D weight and a bias of its "
            f"{outputs} outputs; {layer.weight} is {weight} and {layer.bias} is {bias}",
        )
        if is_recurrent(layer.kind):
            gates = load_core(layer.kind).gates
            size = weight[-1] // gates
            recurrent = slots[layer.recurrent_weight].shape, slots[layer.recurrent_bias].shape
            _require(
                weight[-1] == gates * size and recurrent == ((size, gates * size), (gates * size,)),
                f"{name}: a {layer.kind} layer of width H takes weights (in, {gates}H) and "
                f"(H, {gates}H) and biases ({gates}H,); {layer.weight} is {weight}, "
                f"{layer.recurrent_weight} {recurrent[0]}, {layer.recurrent_bias} {recurrent[1]}",
            )


def check_network_contract(network: Network, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Raise :class:`ContractViolation` naming the first broken part of the contract."""
    name = type(network).__name__
    if network.layers:  # a network without a table (a module) runs its own forwards
        _check_table(network)
    params = network.initial_params(torch.Generator().manual_seed(0))
    again = network.initial_params(torch.Generator().manual_seed(0))
    _require(
        params.shape == (network.num_params,) and bool(torch.isfinite(params).all()),
        f"{name}.initial_params must give a finite ({network.num_params},) vector",
    )
    _require(torch.equal(params, again), f"{name}.initial_params must follow its generator")
    inputs = network.example_inputs(4, torch.Generator().manual_seed(1))
    single = network.forward_single(params, inputs)
    _require(
        single.shape == (4, network.output_size),
        f"{name}.forward_single must give (b, {network.output_size}), got {tuple(single.shape)}",
    )
    if network.layers or network.critic_shares_trunk:
        features = network.features(params, inputs)
        _require(
            features.shape == (4, network.feature_size),
            f"{name}.features must give (b, feature_size={network.feature_size}), got "
            f"{tuple(features.shape)}",
        )
        _require(
            torch.allclose(network.head(params, features), single, rtol=rtol, atol=atol),
            f"{name}: head(features(x)) must be the forward pass",
        )
    members = torch.stack(
        [network.initial_params(torch.Generator().manual_seed(seed)) for seed in range(4)]
    )
    batched = network.forward_population(members, inputs)
    expected = torch.cat([network.forward_single(members[m], inputs[m : m + 1]) for m in range(4)])
    _require(
        torch.allclose(batched, expected, rtol=rtol, atol=atol),
        f"{name}.forward_population must match forward_single member by member (off by "
        f"{float((batched - expected).abs().max()):.2e})",
    )
    if network.critic_shares_trunk:
        _check_members_trunk(network, members, inputs, rtol, atol)
    if not network.critic_shares_trunk:
        critic = network.resized(1)
        _require(
            critic.output_size == 1
            and critic.forward_single(
                critic.initial_params(torch.Generator().manual_seed(0)), inputs
            ).shape
            == (4, 1),
            f"{name}.resized(1) must give the same architecture with one output (a critic)",
        )
    check_backend_contract(
        registry.load("backends", "torch"), networks=[network], rtol=rtol, atol=atol
    )


def _check_members_trunk(
    network: Network, members: torch.Tensor, inputs: torch.Tensor, rtol: float, atol: float
) -> None:
    """Learners acting together: each member's trunk and head, two steps in a row (a
    recurrent state carried over), match the member's own single forward."""
    name = type(network).__name__
    stacked = inputs.unsqueeze(0).expand(len(members), *inputs.shape)
    states = None
    expected_states: list = [None] * len(members)
    for step in range(2):
        features, states = network.features_members_with_state(members, stacked, states)
        outputs = network.head_members(members, features)
        for m in range(len(members)):
            alone, expected_states[m] = network.features_with_state(
                members[m], inputs, expected_states[m]
            )
            _require(
                torch.allclose(features[m], alone, rtol=rtol, atol=atol)
                and torch.allclose(
                    outputs[m], network.head(members[m], alone), rtol=rtol, atol=atol
                ),
                f"{name}.features_members_with_state and head_members must match member "
                f"{m}'s features_with_state and head (step {step})",
            )
        if network.state_size:
            _require(
                states is not None
                and states.shape == (len(members), len(inputs), network.state_size),
                f"{name}.features_members_with_state must return states "
                f"(K, b, {network.state_size})",
            )
