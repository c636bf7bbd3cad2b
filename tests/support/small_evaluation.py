"""A small evaluation set-up the engine and scheduler tests share."""

from __future__ import annotations

import torch
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_spec
from neuroplug.envs.reference_batch import collect_reference_batch
from neuroplug.experiment.network_choice import build_network
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population


def small_evaluation(
    task_id: str,
    members: int,
    max_episode_steps: int | None = None,
    normalize: bool = False,
    core: str = "none",
    vbn: bool = False,
    hidden: int = 8,
):
    """``(env, policy, backend, population)``: an 8-unit MLP (``hidden`` units) on ``task_id`` (with an 8-unit
    GRU core for ``core="gru"``, virtual batch norm by a 16-observation reference batch for
    ``vbn``), the torch backend on CPU in fixed tiles (``batching="tiles"``: a member's
    outputs do not depend on its company, so every scheduler must give the same bits), and
    ``members`` noisy copies of one seeded center."""
    env = make_spec(EnvConfig(task_id=task_id, max_episode_steps=max_episode_steps))
    net = NetConfig(hidden_sizes=[hidden], core=core, core_size=8, vbn=vbn)
    network = build_network(net, env)
    if vbn:
        network.reference_batch = collect_reference_batch(env, 16, run_seed=0)
    policy = Policy(network, env, normalize_observations=normalize)
    config = TorchBackendConfig(name="torch", device="cpu", batching="tiles")
    backend = TorchBackend(config, network)
    center = network.initial_params(torch.Generator().manual_seed(0))
    population = Population(
        bases=center.unsqueeze(0),
        base_index=torch.zeros(members, dtype=torch.int64),
        scale=torch.full((members,), 0.5),
        seed=torch.arange(members, dtype=torch.int64),
    )
    return env, policy, backend, population
