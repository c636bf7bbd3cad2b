"""Where a policy is: a run's output dir, its checkpoints folder, a shared folder or a
policy file."""

from __future__ import annotations

from pathlib import Path

from neuroplug.errors import NeuroplugError
from neuroplug.training.checkpoint import BEST_POLICY, checkpoint_dir

SHARED_POLICY = "policy.pt"
"""A shared folder's policy file (:mod:`neuroplug.tools.share`)."""


class PolicySourceError(NeuroplugError):
    """No policy where one was looked for, or a choice the policy file cannot answer."""


def policy_path(source: Path | str) -> Path:
    """The policy file ``source`` names: itself, or the one its folder holds."""
    source = Path(source)
    if source.is_file():
        return source
    if not source.is_dir():
        raise PolicySourceError(
            f"{source} does not exist; give a run's output dir or a policy file"
        )
    for candidate in (
        checkpoint_dir(source) / BEST_POLICY,
        source / SHARED_POLICY,
        source / BEST_POLICY,
    ):
        if candidate.is_file():
            return candidate
    raise PolicySourceError(
        f"no policy in {source}: a run's output dir holds checkpoints/{BEST_POLICY} (written "
        f"at its first checkpoint), a shared folder {SHARED_POLICY}"
    )
