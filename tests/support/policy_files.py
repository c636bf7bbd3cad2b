"""Policy files as a run writes them, made without training, for every network kind
(tests/deploy, tests/tools)."""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.experiment.typed import typed_experiment
from neuroplug.training.checkpoint import atomic_save
from neuroplug.training.components import build_env_and_network
from neuroplug.training.policy_file import PolicyRecord, describe_env, normalizer_as_tensors

KINDS = {
    "mlp": ["algo=es", "env=cartpole", "net.hidden_sizes=[8]"],
    "mlp continuous": ["algo=es", "env=pendulum", "net.hidden_sizes=[8]"],
    "gru core": ["algo=es", "env=cartpole", "net.hidden_sizes=[8]", "net.core=gru", "net.core_size=4"],
    "nature cnn": ["algo=ga", "env=pong", "net=nature_cnn"],
    "impala": ["algo=ppo", "env=pong", "net.type=impala"],
    "module": ["algo=es", "env=cartpole", "net.type=module", "net.module=residual_net:ResidualMLP", "net.kwargs.width=8"],
    "recurrent module": [
        "algo=es", "env=cartpole", "net.type=module", "net.module=residual_net:RecurrentEncoder",
        "net.features=4", "net.kwargs.width=8",
    ],
    "vbn": ["algo=es", "env=cartpole", "net.hidden_sizes=[8]", "net.vbn=true"],
    "masked": ["algo=es", "env=pendulum", "net.hidden_sizes=[8]", "env.observation_mask=[2]"],
}  # fmt: skip
"""Network kinds (and the env settings a policy carries) -> the run's overrides."""


def policy_file(compose, tmp_path, overrides: list[str], seed: int = 3):
    """A policy file as a run writes it, without training: the network's fresh parameters
    and, for vector observations, a normalizer of made-up statistics."""
    experiment = typed_experiment(compose(["logger=none", *overrides]))
    env, network = build_env_and_network(experiment.env, experiment.net)
    generator = torch.Generator().manual_seed(seed)
    params = network.initial_params(generator)
    reference_batch = None
    if network.normalized:
        reference_batch = network.example_inputs(16, generator)
        network.reference_batch = reference_batch
    normalizer = None
    if not env.is_image:
        rng = np.random.default_rng(seed)
        count = 50.0
        mean = rng.normal(size=env.obs_shape[0])
        std = rng.uniform(0.5, 2.0, size=env.obs_shape[0])
        normalizer = {
            "total": mean * count,
            "total_squares": (std**2 + mean**2) * count,
            "count": count,
        }
    record = PolicyRecord(
        config=experiment.to_yaml(),
        unit="generation",
        completed=1,
        policy_params=params,
        best_member_params=params.clone(),
        normalizer=normalizer_as_tensors(normalizer),
        reference_batch=reference_batch,
        eval_return_mean=None,
        env=describe_env(env),
        network_type=network.type_name,
    )
    path = tmp_path / "best_policy.pt"
    atomic_save(record.as_dict(), path)
    return path
