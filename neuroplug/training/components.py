"""Build and validate everything a run needs from its composed config, starting nothing.

Every value is checked here — config fields, the EnvPool task, the network against the
observation space, the plugins — so a bad input fails before any environment starts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from omegaconf import DictConfig

from neuroplug import registry
from neuroplug.api import Algorithm, AlgorithmConfig, Backend, Scheduler
from neuroplug.behaviours import resolve as resolve_behaviour
from neuroplug.config.schema import EnvConfig, LoggerConfig, NetConfig, RunConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.envs.make import make_spec
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.build import build_network
from neuroplug.nets.network import Network
from neuroplug.nets.policy import Policy


@dataclass
class Components:
    """The validated configs and built objects of one run."""

    run: RunConfig
    env: EnvSpec
    network: Network
    policy: Policy
    algorithm: Algorithm
    backend: Backend
    scheduler: Scheduler
    logger: LoggerConfig


def _plugin(kind: str, node: DictConfig) -> tuple[type, object]:
    group = registry.CONFIG_GROUPS[kind]
    name = node.get("name") if isinstance(node, DictConfig) else None
    if not name:
        raise ConfigError(f"{group}.name", "is missing; select a plugin with " + f"{group}=<name>")
    plugin = registry.load(kind, name)
    return plugin, to_dataclass(plugin.config_class, node, group)


def build_components(config: DictConfig) -> Components:
    """Validate ``config`` and build the run's objects (no environment is started)."""
    for group in ("run", "env", "net", "algo", "backend", "scheduler", "logger"):
        if group not in config:
            raise ConfigError(
                group, "is missing from the config", "compose it from neuroplug's conf/"
            )
    run = to_dataclass(RunConfig, config.run, "run")
    logger = to_dataclass(LoggerConfig, config.logger, "logger")
    algorithm_class, algorithm_config = _plugin("algorithms", config.algo)
    backend_class, backend_config = _plugin("backends", config.backend)
    scheduler_class, scheduler_config = _plugin("schedulers", config.scheduler)
    env = make_spec(to_dataclass(EnvConfig, config.env, "env"))
    network = build_network(to_dataclass(NetConfig, config.net, "net"), env)
    assert isinstance(algorithm_config, AlgorithmConfig)
    policy = Policy(network, env, normalize_observations=algorithm_config.obs_norm)
    generator = torch.Generator().manual_seed(run.seed)
    initial_params = network.initial_params(generator)
    algorithm = algorithm_class(
        algorithm_config,
        initial_params,
        run.seed,
        initializer=lambda seed: network.initial_params(torch.Generator().manual_seed(seed)),
    )
    algorithm.bind_network(network)
    if algorithm.behaviour() is not None:
        resolve_behaviour(algorithm.behaviour(), env)  # a name the env cannot give fails now
    return Components(
        run=run,
        env=env,
        network=network,
        policy=policy,
        algorithm=algorithm,
        backend=backend_class(backend_config, network),
        scheduler=scheduler_class(scheduler_config, env),
        logger=logger,
    )
