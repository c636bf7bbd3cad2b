"""``load_policy``: a run's policy (or a shared one) as a :class:`PolicyModule`.

A source is a run's output dir (its ``checkpoints/best_policy.pt``), that checkpoints
folder, a shared folder (``policy.pt``, :mod:`neuroplug.deploy.share`) or a policy file
itself. The network is rebuilt from the config the file holds and the env it describes:
neither the env nor its simulator needs to be installed, only the network's code (a
``net.type=module`` network's class must be importable).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from neuroplug.deploy.policy_module import PolicyModule, network_module
from neuroplug.nets.network import Network
from neuroplug.training.policy_file import (
    PolicyRecord,
    policy_row,
    read_policy_file,
    several_policies,
)
from neuroplug.training.policy_network import build_network
from neuroplug.training.policy_sources import PolicySourceError, policy_path

WHICH = {"policy": "policy_params", "best": "best_member_params"}
"""``which`` -> the record's parameters: the algorithm's deployed policy (ES: the centre;
GA: the elite; a learner: its actor), or the best member ever evaluated."""


def read_policy(source: Path | str) -> PolicyRecord:
    """The policy record ``source`` names (:func:`policy_path`)."""
    return read_policy_file(policy_path(source))


def chosen_params(record: PolicyRecord, which: str, policy: str | None = None) -> torch.Tensor:
    """The record's ``which`` parameters (:data:`WHICH`); of a file holding a policy per
    team or agent, with ``policy`` (a policy's or an agent's name) that one's ``(D,)``,
    else every policy's ``(K, D)``."""
    if which not in WHICH:
        raise PolicySourceError(f"which: unknown choice {which!r} (allowed: {', '.join(WHICH)})")
    params = getattr(record, WHICH[which])
    if params is None:
        raise PolicySourceError(
            f"which={which}: the policy file holds no {WHICH[which]} (try policy)"
        )
    if policy is not None:
        return params[policy_row(record, policy)].float()
    return params.float()


@dataclass
class Deployable:
    """A policy record's network and chosen parameters, checked against each other."""

    record: PolicyRecord
    network: Network
    params: torch.Tensor


def deployable(
    record: PolicyRecord,
    which: str = "policy",
    params: torch.Tensor | None = None,
    policy: str | None = None,
) -> Deployable:
    """The record's network with its ``which`` parameters (or ``params``: an archive
    elite's; ``policy``: one of several), their sizes checked; a file of several policies
    without ``policy`` is refused naming them."""
    held = several_policies(record)
    if held and policy is None and params is None:
        raise PolicySourceError(
            f"the policy file holds {held}: name one with policy=<name> (--policy)"
        )
    network = build_network(record)
    params = chosen_params(record, which, policy) if params is None else params.float()
    if params.numel() != network.num_params:
        raise PolicySourceError(
            f"the policy file holds {params.numel()} parameters but its config builds "
            f"{network.describe()}"
        )
    return Deployable(record, network, params)


def policy_module(found: Deployable) -> PolicyModule:
    """The :class:`PolicyModule` of a :class:`Deployable`."""
    net = network_module(found.network, found.params)
    return PolicyModule(net, found.record.env, found.record.normalizer, found.network.state_size)


def load_policy(
    source: Path | str,
    device: torch.device | str = "cpu",
    which: str = "policy",
    cell: int | None = None,
    policy: str | None = None,
) -> PolicyModule:
    """A run's (or a shared) policy as a ``torch.nn.Module`` on ``device``: raw
    observations in, env actions out (:class:`~neuroplug.deploy.policy_module.PolicyModule`).

    ``source``: a run's output dir, its ``checkpoints`` folder, a shared folder or a policy
    file. ``which``: ``policy`` (the algorithm's deployed parameters) or ``best`` (the best
    member ever evaluated). ``cell``: a quality-diversity run's archive elite of that cell
    (read from the run's last checkpoint). ``policy``: of a run with a policy per team or
    agent (``env.policy_mapping``), the one to load, by its name or an agent's it plays. The
    module is in eval mode with its parameters frozen (``policy.requires_grad_(True)`` to
    train it further).
    """
    record = read_policy(source)
    params = None
    if cell is not None:
        from neuroplug.deploy.archive_elites import archive_cell

        params = archive_cell(Path(source), cell)["params"]
    module = policy_module(deployable(record, which, params, policy))
    # For acting: no autograd graph behind the actions (``requires_grad_(True)`` to fine-tune).
    return module.to(torch.device(device)).eval().requires_grad_(False)
