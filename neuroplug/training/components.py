"""Build and validate everything a run needs from its typed config, starting nothing.

What the config alone cannot check is checked here — the EnvPool task, the network
against the observation space, the behaviour against the env, each plugin's own checks
in its constructor — so a bad input fails before any environment starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug import registry
from neuroplug.api import (
    Algorithm,
    AlgorithmContext,
    Backend,
    Learner,
    LearnerConfig,
    LearnerContext,
    Scheduler,
)
from neuroplug.behaviours import resolve as resolve_behaviour
from neuroplug.devices import TorchThreads
from neuroplug.envs.make import make_spec
from neuroplug.envs.spec import EnvSpec
from neuroplug.experiment import Experiment
from neuroplug.learners.presets import resolve as resolve_learner_settings
from neuroplug.nets.build import build_network
from neuroplug.nets.network import Network
from neuroplug.nets.policy import Policy


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

    @property
    def run(self):
        """The ``run`` settings (seed, budgets, evaluation, checkpoints)."""
        return self.config.run


def build_components(config: Experiment) -> Components:
    """Build the run's objects from ``config`` (no environment is started)."""
    env = make_spec(config.env)
    network = build_network(config.net, env)
    kind, algorithm_class = registry.load_selected("algo", config.algo.name)
    if kind.name == "learners":
        policy = Policy(network, env, normalize_observations=False)
        settings, source = resolve_learner_settings(config.algo, env)
        # PyTorch's CPU threads, by the run's one rule (neuroplug.devices): the learner's
        # algo.torch_threads; for evolution, the backend's inference threads.
        threads = TorchThreads(settings.torch_threads)
        context = _learner_context(config, settings, source, env, network)
        algorithm = registry.construct(
            kind.name, config.algo.name, algorithm_class, settings, context
        )
    else:
        threads = TorchThreads(getattr(config.backend, "num_threads", 0))
        policy = Policy(network, env, normalize_observations=config.algo.obs_norm)
        context = AlgorithmContext.for_network(network, config.run.seed)
        algorithm = registry.construct(
            kind.name, config.algo.name, algorithm_class, config.algo, context
        )
        if algorithm.behaviour() is not None:
            resolve_behaviour(algorithm.behaviour(), env)  # a name the env cannot give fails now
    backend_class = registry.load("backends", config.backend.name)
    scheduler_class = registry.load("schedulers", config.scheduler.name)
    return Components(
        config=config,
        env=env,
        network=network,
        policy=policy,
        algorithm=algorithm,
        backend=registry.construct(
            "backends", config.backend.name, backend_class, config.backend, network
        ),
        scheduler=registry.construct(
            "schedulers", config.scheduler.name, scheduler_class, config.scheduler, env
        ),
        family=kind.name,
        threads=threads,
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
        max_env_steps = run.generation_budget * settings.segment_steps
    return LearnerContext(
        network=network,
        env=env,
        initial_params=AlgorithmContext.for_network(network, run.seed).initial_params,
        seed=run.seed,
        num_threads=config.scheduler.num_threads,
        max_env_steps=max_env_steps,
        deterministic=run.deterministic,
        settings_source=source,
    )
