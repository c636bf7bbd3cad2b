"""Build and validate everything a run needs from its typed config, starting nothing.

What the config alone cannot check is checked here — the EnvPool task, the network
against the observation space, the behavior against the env, each plugin's own checks
in its constructor — so a bad input fails before any environment starts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from neuroplug import registry
from neuroplug.api import (
    Algorithm,
    Backend,
    BackendConfig,
    Learner,
    LearnerConfig,
    LearnerContext,
    Scheduler,
)
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.envs.make import make_spec
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, require
from neuroplug.evaluation.behaviors import resolve as resolve_behavior
from neuroplug.evolution.context import algorithm_context
from neuroplug.experiment.network_choice import build_network, network_class
from neuroplug.experiment.typed import (
    Experiment,
    check_policy_mapping,
    check_self_play,
    check_virtual_batch_norm,
)
from neuroplug.nets.network import Network
from neuroplug.nets.policy import Policy
from neuroplug.plugin_configs.presets import resolve as resolve_learner_settings
from neuroplug.runtime.devices import TorchThreads, flush_denormals, set_matmul_precision
from neuroplug.runtime.memory import keep_freed_memory
from neuroplug.training.lane_memory import refuse_lanes_beyond_memory


@dataclass
class Components:
    """The built objects of one run, with the typed config they came from."""

    config: Experiment
    env: EnvSpec
    network: Network
    policy: Policy
    algorithm: Algorithm | Learner
    backend: Backend
    scheduler: Scheduler
    family: str = "algorithms"
    """The registry kind of the ``algo`` plugin: ``algorithms`` or ``learners``."""
    threads: TorchThreads | None = None
    """PyTorch's CPU threads, re-checked before every generation or segment."""
    network_note: str = ""
    """A default the start-up line names: virtual batch norm chosen for the algorithm."""

    @property
    def run(self):
        """The ``run`` settings (seed, budgets, evaluation, checkpoints)."""
        return self.config.run


def build_env_and_network(env_config: EnvConfig, net_config: NetConfig) -> tuple[EnvSpec, Network]:
    """The env spec and its network: how every run, replay and contract check builds them."""
    env = make_spec(env_config)
    return env, build_network(net_config, env)


def build_backend(backend_config: BackendConfig | Any, network: Network) -> Backend:
    """The ``backend`` plugin for ``network``, from its typed settings or a config node (a
    checkpoint's), checked against the plugin contract."""
    backend_class = registry.load("backends", backend_config.name)
    if network.normalized and not backend_class.runs_virtual_batch_norm:
        raise ConfigError(
            "net.vbn",
            f"backend={backend_config.name} runs no virtual batch norm",
            "backend=torch, or net.vbn=false",
        )
    if network.state_size and not backend_class.runs_recurrent_cores:
        raise ConfigError(
            "net.core",
            f"backend={backend_config.name} runs no recurrent core",
            "backend=torch, or net.core=none",
        )
    if not isinstance(backend_config, backend_class.config_class):
        backend_config = to_dataclass(backend_class.config_class, backend_config, "backend")
    return registry.construct(
        "backends", backend_config.name, backend_class, backend_config, network
    )


def learner_context(
    network: Network,
    env: EnvSpec,
    seed: int,
    max_env_steps: int | None,
    env_threads: int = 0,
    deterministic: bool = False,
    settings_source: str = "",
) -> LearnerContext:
    """What a learner is built from: the network (initialised from ``seed``), the env, the
    run's seed and budget."""
    return LearnerContext(
        network=network,
        env=env,
        initial_params=algorithm_context(network, seed).initial_params,
        seed=seed,
        env_threads=env_threads,
        max_env_steps=max_env_steps,
        deterministic=deterministic,
        settings_source=settings_source,
    )


def build_components(config: Experiment, env: EnvSpec | None = None) -> Components:
    """Build the run's objects from ``config`` (no environment is started); ``env`` is the
    spec of ``config.env`` where the caller made it already (a gymnasium env's spec steps
    the env once to time it). The components' config is ``config`` with the defaults that
    depend on the task decided (``net.vbn``), so a checkpoint's record rebuilds the same
    network."""
    check_virtual_batch_norm(config)
    check_self_play(config)
    check_policy_mapping(config)
    flush_denormals()
    keep_freed_memory()
    set_matmul_precision(config.run.matmul_precision)
    env = make_spec(config.env) if env is None else env
    config, network_note = _decide_virtual_batch_norm(config, env)
    config = _decide_network_defaults(config)
    network = build_network(config.net, env)
    kind, algorithm_class = registry.load_selected("algo", config.algo.name)
    scheduler_class = registry.load("schedulers", config.scheduler.name)
    scheduler = registry.construct(
        "schedulers", config.scheduler.name, scheduler_class, config.scheduler, env
    )
    require(
        env.agents or not config.selfplay.enabled,
        "selfplay",
        f"pool plays opponents in a multi-agent world, and {env.task_id} has one agent",
        "a multi-agent env (env.parallel_env: env=pong_duel, simple_tag, pong_ma), or "
        "selfplay=none",
    )
    if kind.name == "learners":
        if network.state_size and not getattr(network, "encoder_features", 1):
            raise ConfigError(
                "net.features",
                f"{network.describe()} is a recurrent whole policy, which evolution runs; "
                "a learner trains a recurrent encoder under its own heads",
                "net.features=<the width of its features> (a recurrent encoder), or an "
                "evolutionary algorithm",
            )
        if network.state_size:
            require(
                algorithm_class.trains_recurrent_cores,
                "net.core",
                f"algo={config.algo.name} trains feed-forward networks only",
                "net.core=none, or a learner that trains cores (ppo, appo, pbt)",
            )
        policy = Policy(network, env, normalize_observations=False)
        settings, source = resolve_learner_settings(config.algo, env)
        lanes = env.lanes_per_env
        require(
            settings.num_envs % lanes == 0,
            "algo.num_envs",
            f"{settings.num_envs} envs do not hold whole worlds of {env.task_id}, whose "
            f"{lanes} agents take an env each",
            f"a multiple of {lanes} ({lanes * max(1, round(settings.num_envs / lanes))}, say)",
        )
        # PyTorch's CPU threads, by the run's one rule (neuroplug.runtime.devices): the learner's
        # algo.torch_threads; for evolution, the backend's inference threads.
        threads = TorchThreads(settings.torch_threads)
        context = _learner_context(config, settings, source, env, network)
        # The scheduler says where the learner's envs are stepped (Ray actors, shards).
        context = dataclasses.replace(
            context,
            samplers=scheduler.learner_sampler,
            envs_per_shard=config.scheduler.envs_per_shard,
            self_play=config.selfplay if config.selfplay.enabled else None,
        )
        from neuroplug.rl.learner_population import LearnerPopulation

        # A lone learner becomes one per policy; a population of learners (PBT) splits each
        # member's worlds among its policies itself.
        if env.policy_mapping != "shared" and not issubclass(algorithm_class, LearnerPopulation):
            from neuroplug.rl.agent_policies import AgentPolicies

            algorithm = AgentPolicies(settings, context, algorithm_class)
        else:
            algorithm = registry.construct(
                kind.name, config.algo.name, algorithm_class, settings, context
            )
    else:
        threads = TorchThreads(getattr(config.backend, "torch_threads", 0))
        policy = Policy(network, env, normalize_observations=config.algo.obs_norm)
        context = algorithm_context(network, config.run.seed, env)
        if env.agents and env.policy_mapping != "shared":
            from neuroplug.evolution.policy_populations import PolicyPopulations

            algorithm = PolicyPopulations(
                config.algo,
                context,
                lambda policy_context: registry.construct(
                    kind.name, config.algo.name, algorithm_class, config.algo, policy_context
                ),
            )
        else:
            algorithm = registry.construct(
                kind.name, config.algo.name, algorithm_class, config.algo, context
            )
        if algorithm.behavior() is not None:
            resolve_behavior(algorithm.behavior(), env)  # a name the env cannot give fails now
        require(
            not (env.agents and algorithm.wants_transitions()),
            "algo",
            f"{config.algo.name} learns from its members' steps, and {env.task_id}'s "
            f"{len(env.agents)} agents a world play games whose steps are not one member's",
            "an evolution strategy or GA (their members' games are scored), or ppo/appo",
        )
        size = getattr(algorithm, "population_size", 0) or config.algo.population_size
        refuse_lanes_beyond_memory(network, env, config.algo, config.scheduler, size)
    return Components(
        config=config,
        env=env,
        network=network,
        policy=policy,
        algorithm=algorithm,
        backend=build_backend(config.backend, network),
        scheduler=scheduler,
        family=kind.name,
        threads=threads,
        network_note=network_note,
    )


def _decide_virtual_batch_norm(config: Experiment, env: EnvSpec) -> tuple[Experiment, str]:
    """``config`` with ``net.vbn`` true or false, and what the start-up line says of it.

    Null means the algorithm's paper's choice: on for the env families its config names
    (``AlgorithmConfig.virtual_batch_norm_families``: the ES family on Atari), where the
    backend runs it."""
    vbn, note = config.net.vbn, ""
    if vbn is None and config.net.type != "auto":
        if not network_class(config.net.type).supports_virtual_batch_norm:
            vbn = False  # a network that runs its own forward has no layers to normalise
    if vbn is None:
        families = getattr(type(config.algo), "virtual_batch_norm_families", ())
        vbn = str(env.family) in families
        backend = config.backend.name
        if vbn and not registry.load("backends", backend).runs_virtual_batch_norm:
            vbn = False
            note = (
                f"no virtual batch norm, {config.algo.name}'s default on {env.family}: "
                f"backend={backend} runs none (backend=torch does)"
            )
        elif vbn:
            note = (
                f"virtual batch norm is {config.algo.name}'s default on {env.family}, as in "
                "its paper; net.vbn=false turns it off"
            )
    if vbn and not env.is_image and config.algo.obs_norm:
        raise ConfigError(
            "net.vbn",
            "virtual batch norm normalizes by a fixed reference batch of raw observations, "
            "which algo.obs_norm's moving statistics would no longer match",
            "algo.obs_norm=false with net.vbn=true, or net.vbn=false",
        )
    return dataclasses.replace(config, net=dataclasses.replace(config.net, vbn=vbn)), note


def _decide_network_defaults(config: Experiment) -> Experiment:
    """``config`` with ``net.activation`` and ``net.init`` named: null means the
    algorithm's reference implementation's (:meth:`~neuroplug.plugin_configs.bases.
    PluginConfig.network_activation`, :meth:`~neuroplug.plugin_configs.bases.PluginConfig.
    network_initialization`), so config.yaml and a checkpoint's record say what the network
    was built with."""
    net = config.net
    activation = net.activation or config.algo.network_activation()
    init = net.init or config.algo.network_initialization()
    return dataclasses.replace(
        config, net=dataclasses.replace(net, activation=activation, init=init)
    )


def _learner_context(
    config: Experiment, settings: LearnerConfig, source: str, env: EnvSpec, network: Network
) -> LearnerContext:
    """What a learner is built from: the network, the env, the run's seed and budget, and
    where its ``settings`` left unset came from."""
    run = config.run
    # The frame budget when there is one: it stays put when a resumed run extends
    # run.max_generations, so learning-rate schedules resume exactly.
    if run.max_frames is not None:
        max_env_steps = run.max_frames // env.frame_skip
    else:
        max_env_steps = run.unit_budget * settings.segment_steps
    return learner_context(
        network,
        env,
        run.seed,
        max_env_steps,
        env_threads=config.scheduler.env_threads,
        deterministic=run.deterministic,
        settings_source=source,
    )
