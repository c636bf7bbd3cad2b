"""The network a policy file describes, rebuilt without its env: an :class:`EnvSpec` of
the env the file describes (enough to build a network; no pools), the network its config
builds, and the parameters it holds, checked against each other. What
:func:`neuroplug.load_policy` wraps as a module and what a run's evaluation plays against
(``selfplay.eval_opponent`` naming a run)."""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.envs.measurements import MeasurementLayout
from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.network import Network
from neuroplug.training.policy_file import PolicyRecord
from neuroplug.training.policy_sources import PolicySourceError


def env_spec(record: PolicyRecord) -> EnvSpec:
    """An :class:`EnvSpec` of the record's env, enough to build its network (no pools)."""
    from neuroplug.envs.families import family_named

    env = record.env
    family = family_named(env["family"]) or family_named("gymnasium")

    def array(values: list[float] | None) -> np.ndarray | None:
        return None if values is None else np.asarray(values, dtype=np.float32)

    return EnvSpec(
        task_id=env["task_id"],
        family=family,
        obs_shape=tuple(env["obs_shape"]),
        obs_dtype=np.dtype(env["obs_dtype"]),
        discrete=bool(env["discrete"]),
        num_actions=int(env["num_actions"]),
        action_low=array(env["action_low"]),
        action_high=array(env["action_high"]),
        frame_skip=1,
        max_episode_steps=0,
        solved_return=None,
        observation_mask=tuple(env.get("observation_mask") or ()),
        obs_parts=tuple((key, tuple(shape)) for key, shape in env.get("obs_parts") or ()),
        obs_categorical=tuple(env.get("obs_categorical") or ()),
        measurement_layout=(
            MeasurementLayout.from_description(env["measurement_layout"])
            if env.get("measurement_layout")
            else None
        ),
    )


def build_network(record: PolicyRecord) -> Network:
    """The record's network, as its run built it (``net.type=auto`` as the run chose)."""
    import dataclasses

    from omegaconf import OmegaConf

    from neuroplug.config.schema import NetConfig
    from neuroplug.config.typed import to_dataclass
    from neuroplug.experiment.network_choice import build_network as build

    settings = to_dataclass(NetConfig, OmegaConf.create(record.config).net, "net")
    if settings.type == "auto" and record.network_type:
        settings = dataclasses.replace(settings, type=record.network_type)
    network = build(settings, env_spec(record))
    set_reference_batch(network, record.reference_batch)
    return network


def set_reference_batch(network: Network, reference_batch: torch.Tensor | None) -> None:
    """Give a network with virtual batch norm the run's reference batch; refuse a policy
    file that lacks it (nothing else to normalise by)."""
    if not network.normalized:
        return
    if reference_batch is None:
        raise PolicySourceError(
            f"its config builds {network.describe()}, and the policy file holds no "
            "reference batch to normalize by"
        )
    network.reference_batch = reference_batch
