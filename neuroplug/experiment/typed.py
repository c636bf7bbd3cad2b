"""The composed config, typed once at the front door: the only form that travels past it.

Hydra composes a ``DictConfig``; :func:`typed_experiment` turns every group into its schema
dataclass — the core groups' from :mod:`neuroplug.config.schema`, the plugin groups' from
the selected plugin's ``config_class`` — running each one's ``check``, so a bad
value fails here, naming the field, before anything is built. Training, checkpoints and
loggers read the :class:`Experiment` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from omegaconf import DictConfig, OmegaConf

from neuroplug import registry
from neuroplug.api import AlgorithmConfig, BackendConfig, LearnerConfig, SchedulerConfig
from neuroplug.config.schema import EnvConfig, LoggerConfig, NetConfig, RunConfig, SelfPlayConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.errors import ConfigError

PLUGIN_GROUPS = ("algo", "backend", "scheduler")
"""The config groups that select a plugin (``algo`` selects an algorithm or a learner)."""


@dataclass
class Experiment:
    """Every setting of one run, validated and typed."""

    run: RunConfig
    env: EnvConfig
    net: NetConfig
    algo: AlgorithmConfig | LearnerConfig
    backend: BackendConfig
    scheduler: SchedulerConfig
    logger: LoggerConfig
    selfplay: SelfPlayConfig

    def as_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists (for W&B and for the YAML record)."""
        return {field.name: asdict(getattr(self, field.name)) for field in fields(self)}

    def to_yaml(self) -> str:
        """The YAML a checkpoint and ``config.yaml`` keep (:meth:`from_yaml` reads it back)."""
        return OmegaConf.to_yaml(OmegaConf.create(self.as_dict()))

    @classmethod
    def from_yaml(cls, text: str) -> Experiment:
        """The experiment a :meth:`to_yaml` record (a checkpoint's ``config``) describes."""
        return typed_experiment(OmegaConf.create(text))


def typed_experiment(config: DictConfig | Mapping[str, Any]) -> Experiment:
    """Validate ``config`` (a composed config, or a checkpoint's record) and type it."""
    if not isinstance(config, DictConfig):
        config = OmegaConf.create(dict(config))
    for group in ("run", "env", "net", "algo", "backend", "scheduler", "logger"):
        if group not in config:
            raise ConfigError(
                group, "is missing from the config", "compose it from neuroplug's conf/"
            )
    # The order the checks run in: the run and logger, the plugins, then env and net.
    groups: dict[str, Any] = {
        "run": to_dataclass(RunConfig, config.run, "run"),
        "logger": to_dataclass(LoggerConfig, config.logger, "logger"),
    }
    for group in PLUGIN_GROUPS:
        node = config[group]
        name = node.get("name") if isinstance(node, DictConfig) else None
        if not name:
            raise ConfigError(f"{group}.name", f"is missing; select a plugin with {group}=<name>")
        # The config class alone: a bad value is refused before the plugin (and torch) loads.
        groups[group] = to_dataclass(registry.selected_config_class(group, name), node, group)
    groups["env"] = to_dataclass(EnvConfig, config.env, "env")
    groups["net"] = to_dataclass(NetConfig, config.net, "net")
    # A record from before self-play existed ran without it.
    groups["selfplay"] = to_dataclass(SelfPlayConfig, config.get("selfplay", {}), "selfplay")
    return Experiment(**groups)


def check_budget_unit(experiment: Experiment) -> None:
    """An evolution algorithm counts generations, a learner segments: a command's budget in
    the other unit is refused, naming the one to use. Checked where a command starts a run
    (:func:`neuroplug.app.run_job`)."""
    run, name = experiment.run, experiment.algo.name
    learner = isinstance(experiment.algo, LearnerConfig)
    wrong, right = (
        ("max_generations", "max_segments") if learner else ("max_segments", "max_generations")
    )
    if getattr(run, wrong) is not None:
        unit = "segments" if learner else "generations"
        raise ConfigError(
            f"run.{wrong}",
            f"algo={name} counts {unit}, not {wrong.removeprefix('max_')}",
            f"run.{right}={getattr(run, wrong)}",
        )


def check_virtual_batch_norm(experiment: Experiment) -> None:
    """``net.vbn=true`` is evolution's: a learner's network is refused it, naming the
    value to use (cheap, so a command refuses it before torch loads)."""
    if experiment.net.vbn and isinstance(experiment.algo, LearnerConfig):
        raise ConfigError(
            "net.vbn",
            f"algo={experiment.algo.name} learns by gradients; virtual batch norm's fixed "
            "reference statistics are for evolution (es, ga, novelty search)",
            "net.vbn=false, or null",
        )


def check_self_play(experiment: Experiment) -> None:
    """``selfplay=pool``: a learner trains against its opponents, a population against its
    members and hall of fame; scripted bots (``selfplay.bots``) play learners only, and a
    population of learners' members (``selfplay.members``) play each other only under
    ``algo=pbt`` (evolution's already do) (cheap: before torch loads)."""
    selfplay = experiment.selfplay
    if selfplay.enabled and selfplay.members and experiment.algo.name != "pbt":
        raise ConfigError(
            "selfplay.members",
            f"puts a population's members in each other's pools, and "
            f"algo={experiment.algo.name} "
            + (
                "is one learner"
                if isinstance(experiment.algo, LearnerConfig)
                else "plays its members against each other already (coevolution)"
            ),
            "algo=pbt, or selfplay.members=false",
        )
    if selfplay.enabled and selfplay.bots and not isinstance(experiment.algo, LearnerConfig):
        raise ConfigError(
            "selfplay.bots",
            f"scripted bots play against learners; algo={experiment.algo.name}'s opponents "
            "are its members and its hall of fame (selfplay.pool_size)",
            "selfplay.bots=[] (selfplay.eval_opponent still evaluates against a bot), or "
            "algo=ppo/appo",
        )


def check_policy_mapping(experiment: Experiment) -> None:
    """A policy per team or agent (``env.policy_mapping`` other than ``shared``) is trained
    by a lone learner or by population-based training (a learner per policy in each
    member), or evolved by a population per policy; under ``selfplay=pool`` each policy
    has a hall of fame. Scripted bots in the pool (``selfplay.bots``), members in each
    other's pools (``selfplay.members``) and ``selfplay.learner_agents`` are refused it,
    naming the setting (cheap: before torch loads)."""
    mapping = experiment.env.policy_mapping
    if mapping == "shared":
        return
    if experiment.selfplay.enabled and experiment.selfplay.members:
        raise ConfigError(
            "selfplay.members",
            f"puts members in each other's pools, and env.policy_mapping={mapping} plays "
            "each member's policies against each other and their halls of fame on its own "
            "worlds",
            "selfplay.members=false, or env.policy_mapping=shared",
        )
    if experiment.selfplay.enabled and experiment.selfplay.bots:
        raise ConfigError(
            "selfplay.bots",
            f"got {list(experiment.selfplay.bots)}, and env.policy_mapping={mapping} plays "
            "each policy against the others and their halls of fame (a bot has no side)",
            "selfplay.bots=[] (selfplay.eval_opponent still evaluates each policy against "
            "a bot), or env.policy_mapping=shared",
        )
    if experiment.selfplay.enabled and experiment.selfplay.learner_agents:
        raise ConfigError(
            "selfplay.learner_agents",
            f"got {list(experiment.selfplay.learner_agents)}, and env.policy_mapping={mapping} "
            "seats each population on its own agents",
            "[] (the default)",
        )
