"""The contract every backend plugin honours, checked on small networks and populations.

Use it from a plugin's own tests::

    from neuroplug.testing import check_backend_contract

    def test_my_backend_honours_the_contract():
        check_backend_contract(MyBackend)

For an MLP (and, unless ``networks`` says otherwise, a small Nature CNN) and each kind of
population the algorithms build — plain parameter vectors, one center plus mirrored noise
(ES), several bases plus noise (the GA), a per-parameter sigma, low-rank perturbations
(EGGROLL), fresh initialisation draws (random search) — it checks that after ``load``:

- ``forward(members, observations)`` gives ``(n, output_size)`` finite float outputs, and
  each row is member ``members[j]``'s network on ``observations[j]``: the reference
  :meth:`neuroplug.nets.network.Network.forward_single` of the member
  :meth:`neuroplug.population.members.Population.materialize` builds, within ``rtol``/``atol``;
- a member's outputs are the same bits whatever batch it rides in (alone, among others,
  shuffled, twice in one call), which the schedulers' identical results rely on, where
  the backend claims it (:attr:`~neuroplug.api.Backend.batch_invariant`), and agree to
  ``rtol``/``atol`` where it does not;
- an empty call returns ``(0, output_size)``, and loading another population replaces
  the first.

A backend that sets ``runs_virtual_batch_norm`` is checked on the same networks with
virtual batch norm too (:func:`normalized_networks`): its members are the reference
forward of :meth:`~neuroplug.nets.network.Network.deploy`'s folded weights.

``config``: the backend's settings (default: its ``config_class`` with ``device``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from neuroplug.api import Backend, BackendConfig
from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.nets.network import Network, SeededInitializer
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population
from neuroplug.testing.algorithm_contract import ContractViolation

SIZE = 12


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def default_networks() -> list[Network]:
    """The networks checked by default: a small MLP and a small Nature CNN."""
    return [MLP(5, [16, 16], 3, "tanh"), NatureCNN((2, 36, 36), 4)]


def normalized_networks() -> list[Network]:
    """:func:`default_networks` with virtual batch norm, each with a reference batch."""
    networks = [MLP(5, [16, 16], 3, "tanh", vbn=True), NatureCNN((2, 36, 36), 4, vbn=True)]
    for network in networks:
        network.reference_batch = network.example_inputs(8, torch.Generator().manual_seed(7))
    return networks


def populations(network: Network) -> dict[str, Population]:
    """One population of each kind the algorithms build, of ``SIZE`` members."""
    generator = torch.Generator().manual_seed(11)
    bases = torch.stack([network.initial_params(generator) for _ in range(3)])
    seeds = torch.randint(0, 2**31 - 1, (SIZE,), generator=generator)
    mirrored = torch.tensor([0.05, -0.05]).repeat(SIZE // 2)
    one_base = torch.zeros(SIZE, dtype=torch.int64)
    return {
        "parameter vectors": Population.dense(
            bases[0] + 0.1 * torch.randn(SIZE, network.num_params, generator=generator)
        ),
        "center and mirrored noise": Population(bases[:1], one_base, mirrored, seeds),
        "several bases and noise": Population(
            bases, torch.arange(SIZE) % 3, torch.full((SIZE,), 0.02), seeds
        ),
        "per-parameter sigma": Population(
            bases[:2],
            torch.arange(SIZE) % 2,
            torch.full((SIZE,), 1.0),
            seeds,
            sigma=0.01 + 0.05 * torch.rand(2, network.num_params, generator=generator),
        ),
        "low-rank noise": Population(
            bases[:1], one_base, mirrored, seeds, lowrank=lowrank_for(network.layout, 2, 64)
        ),
        "fresh initialisation draws": Population.fresh(
            seeds, SeededInitializer(network), network.num_params
        ),
    }


def _inputs(network: Network, count: int) -> torch.Tensor:
    return network.example_inputs(count, torch.Generator().manual_seed(5))


def _compositions() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return [
        torch.tensor([4]),
        torch.arange(2, 9),
        torch.randperm(SIZE, generator=generator)[:7],
        torch.tensor([6, 1, 6, 10]),
    ]


def check_backend_contract(
    backend_class: type[Backend],
    config: BackendConfig | None = None,
    networks: Sequence[Network] | None = None,
    device: str = "cpu",
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """Raise :class:`ContractViolation` naming the first broken part of the contract."""
    name = backend_class.__name__
    if networks is None:
        networks = default_networks()
        if backend_class.runs_virtual_batch_norm:
            networks += normalized_networks()
    for network in networks:
        settings = config or backend_class.config_class(name=name.lower(), device=device)
        backend = backend_class(settings, network)
        observations = _inputs(network, SIZE)
        for kind, population in populations(network).items():
            where = f"{name} on {network.describe()}, {kind}"
            backend.load(population)
            everyone = torch.arange(SIZE)
            full = backend.forward(everyone, observations.to(backend.device)).cpu()
            _require(
                full.shape == (SIZE, network.output_size) and full.is_floating_point(),
                f"{where}: forward must give (n, {network.output_size}) floats, got "
                f"{tuple(full.shape)} {full.dtype}",
            )
            _require(bool(torch.isfinite(full).all()), f"{where}: outputs must be finite")
            members = network.deploy(population.materialize())
            expected = torch.cat(
                [network.forward_single(members[m], observations[m : m + 1]) for m in range(SIZE)]
            )
            _require(
                torch.allclose(full.float(), expected, rtol=rtol, atol=atol),
                f"{where}: outputs differ from the reference forward of the materialised "
                f"members by {float((full.float() - expected).abs().max()):.2e}",
            )
            for chosen in _compositions():
                rows = backend.forward(chosen, observations[chosen].to(backend.device)).cpu()
                if backend.batch_invariant:
                    _require(
                        torch.equal(rows, full[chosen]),
                        f"{where}: members {chosen.tolist()} computed together differ from "
                        "the same members in the full batch (the backend claims "
                        "batch_invariant: a member's outputs must not depend on its batch)",
                    )
                else:
                    _require(
                        torch.allclose(rows.float(), full[chosen].float(), rtol=rtol, atol=atol),
                        f"{where}: members {chosen.tolist()} computed together differ from "
                        "the same members in the full batch beyond rounding",
                    )
            empty = backend.forward(
                torch.zeros(0, dtype=torch.int64), observations[:0].to(backend.device)
            )
            _require(
                tuple(empty.shape) == (0, network.output_size),
                f"{where}: an empty call must give (0, {network.output_size})",
            )
        # Loading another population replaces the first.
        replacement = Population.dense(torch.zeros(SIZE, network.num_params))
        backend.load(replacement)
        zeros = backend.forward(torch.arange(SIZE), observations.to(backend.device)).cpu()
        _require(
            torch.allclose(zeros.float(), torch.zeros_like(zeros).float(), atol=atol),
            f"{name}: load() of a new population must replace the old one",
        )
