"""The deployable policy file (``checkpoints/best_policy.pt``): data only, readable anywhere.

A run writes it beside each checkpoint; :func:`neuroplug.load_policy`, ``neuroplug.tools.
watch``, ``export`` and ``share`` read it. It holds only tensors, numbers, strings, lists
and dicts, so plain ``torch.load(path, weights_only=True)`` reads it (no numpy inside, no
allow-list needed), and it describes its env (:func:`describe_env`), so that building the
policy back needs neither the env nor its simulator installed::

    format             "neuroplug-policy"      what the file is
    format_version     1
    config             the run's resolved config, as YAML
    unit, completed    "generation" or "segment", and how many were done
    policy_params      (D,) the deployed parameters (ES: the centre; a learner: its actor);
                       (K, D) with a policy per team or agent (env's ``policies`` names
                       the rows, ``agent_policies`` gives each of its ``agents`` its row)
    best_member_params (D,) or None: the best member ever evaluated
    normalizer         {total, total_squares: float64 (n,), count: float} or None
    reference_batch    virtual batch norm's reference observations, or None
    eval_return_mean   the run's last evaluation, or None
    env                the observations and actions (:func:`describe_env`)
    network_type       the network the run built (``net.type=auto``'s choice)
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from neuroplug.errors import NeuroplugError
from neuroplug.training.checkpoint import UnsafeFileError, what_was_refused
from neuroplug.training.policy_sources import PolicySourceError

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec

FORMAT = "neuroplug-policy"
FORMAT_VERSION = 1
UNITS = ("generation", "segment")


class PolicyFileError(NeuroplugError):
    """A file is not a neuroplug policy, or one of another format version."""


@dataclass
class PolicyRecord:
    """What a policy file holds (see the module docstring)."""

    config: str
    unit: str
    completed: int
    policy_params: torch.Tensor
    best_member_params: torch.Tensor | None
    normalizer: dict[str, Any] | None
    reference_batch: torch.Tensor | None
    eval_return_mean: float | None
    env: dict[str, Any]
    network_type: str = ""
    """The network plugin the run built (``net.type=auto``'s choice); empty: built in code."""

    def as_dict(self) -> dict[str, Any]:
        """The file's payload."""
        return {"format": FORMAT, "format_version": FORMAT_VERSION, **vars(self)}


def describe_env(env: EnvSpec) -> dict[str, Any]:
    """What a policy needs to know of its env, in plain types: the task, its family, the
    observations the network sees (shape, dtype, the entries removed before it, a dict
    observation's parts, the measurements packed below a frame's pixels) and the actions
    (discrete count, or the box's bounds)."""

    def bounds(values: np.ndarray | None) -> list[float] | None:
        return None if values is None else [float(value) for value in np.ravel(values)]

    return {
        "task_id": env.task_id,
        "family": str(env.family),
        "obs_shape": [int(size) for size in env.obs_shape],
        "obs_dtype": np.dtype(env.obs_dtype).name,
        "discrete": bool(env.discrete),
        "num_actions": int(env.num_actions),
        "action_low": None if env.discrete else bounds(env.action_low),
        "action_high": None if env.discrete else bounds(env.action_high),
        "observation_mask": [int(index) for index in env.observation_mask],
        "obs_parts": [[key, [int(size) for size in shape]] for key, shape in env.obs_parts],
        "obs_categorical": list(env.obs_categorical),
        "measurement_layout": (
            env.measurement_layout.describe() if env.measurement_layout else None
        ),
        **_agents(env),
    }


def _agents(env: EnvSpec) -> dict[str, Any]:
    """A multi-agent env's agents, and with a policy per team or agent which each one plays
    (``policies`` names the rows of a ``(K, D)`` ``policy_params``)."""
    if not env.agents:
        return {}
    from neuroplug.envs.multi_agent.mapping import env_policies

    mapping = env_policies(env)
    return {
        "agents": list(env.agents),
        "policies": list(mapping.names),
        "agent_policies": list(mapping.of_agent),
    }


def normalizer_as_tensors(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """An :class:`~neuroplug.nets.normalizer.ObservationNormalizer` state with its sums as
    float64 tensors (a weights-only load refuses numpy arrays)."""
    if state is None:
        return None
    return {
        "total": torch.as_tensor(np.asarray(state["total"], dtype=np.float64)),
        "total_squares": torch.as_tensor(np.asarray(state["total_squares"], dtype=np.float64)),
        "count": float(state["count"]),
    }


def normalizer_as_arrays(state: dict[str, Any] | None) -> dict[str, Any] | None:
    """:func:`normalizer_as_tensors` undone: the state an ``ObservationNormalizer`` loads."""
    if state is None:
        return None
    return {
        "total": state["total"].numpy(),
        "total_squares": state["total_squares"].numpy(),
        "count": float(state["count"]),
    }


def read_policy_file(path: Path) -> PolicyRecord:
    """The policy in ``path``, read with ``torch.load(weights_only=True)``; a file that
    is not one (or of another format version) raises :class:`PolicyFileError` in one line
    saying what it is instead, one holding code :class:`UnsafeFileError` (nothing in it
    has run)."""
    path = Path(path)
    if not path.is_file():
        raise PolicyFileError(f"no policy file at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        refused = what_was_refused(str(error))
        if refused is not None:
            raise UnsafeFileError(
                f"refused to load {path}: it holds {refused}, which is not what a neuroplug "
                "policy holds (tensors, numbers, strings, lists, dicts); unpickling it could "
                "run arbitrary code"
            ) from None
        first = str(error).strip().splitlines()[0] if str(error).strip() else "unreadable"
        raise PolicyFileError(
            f"{path} is not a neuroplug policy: a weights-only load refused it ({first}); "
            "a neuroplug run writes its policy to <run dir>/checkpoints/best_policy.pt"
        ) from None
    except Exception as error:  # not a torch file at all, or a truncated one
        raise PolicyFileError(
            f"{path} is not a neuroplug policy: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        held = sorted(payload)[:6] if isinstance(payload, dict) else type(payload).__name__
        raise PolicyFileError(
            f"{path} is not a neuroplug policy (it holds {held}, not "
            f"'format': '{FORMAT}'); a neuroplug run writes its policy to "
            "<run dir>/checkpoints/best_policy.pt"
        )
    if payload.get("format_version") != FORMAT_VERSION:
        raise PolicyFileError(
            f"{path} is a neuroplug policy of format version {payload.get('format_version')}; "
            f"this neuroplug reads version {FORMAT_VERSION}"
        )
    fields = {name: payload.get(name) for name in PolicyRecord.__dataclass_fields__}
    return PolicyRecord(**fields)


def policy_row(record: PolicyRecord, policy: str) -> int:
    """The row of ``policy`` (a policy's name, or an agent's: the policy it plays) in a
    record holding a policy per team or agent; refused naming the choices."""
    names = record.env.get("policies") or []
    agents = record.env.get("agents") or []
    if record.policy_params.dim() != 2:
        raise PolicySourceError(
            f"policy={policy}: the policy file holds one policy (its run's "
            "env.policy_mapping was shared); leave the policy out"
        )
    if policy in names:
        return names.index(policy)
    if policy in agents:
        return int(record.env["agent_policies"][agents.index(policy)])
    raise PolicySourceError(
        f"policy={policy}: no policy or agent of that name (policies: {', '.join(names)}; "
        f"agents: {', '.join(agents)})"
    )


def several_policies(record: PolicyRecord) -> str:
    """What a file holding a policy per team or agent holds, in words ("": one policy)."""
    if record.policy_params.dim() != 2:
        return ""
    from neuroplug.envs.multi_agent.mapping import PolicyMapping

    env = record.env
    mapping = PolicyMapping(tuple(env["policies"]), tuple(env["agent_policies"]))
    return f"{len(mapping)} policies: {mapping.words(env['agents'])}"
