"""What the parity suite compares: each method beside its reference implementation on
two tasks or more, at equal env steps and the reference's settings where ours follow them.

A :class:`Comparison` is one method on one task: our side and the references' sides, the
env-step budget, the seeds and the width of the bins its curves are averaged over. The
budgets are chosen for two CPU cores across a few days (one run per core at a time): at
least 5 seeds where a run costs 5 minutes or less, 3 otherwise (issue 68).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Side:
    """One implementation of a method: ``neuroplug`` (its overrides), or a peer run by
    :mod:`sides` (``cleanrl``: a single-file script and its arguments)."""

    name: str
    """Which implementation: ``neuroplug``, ``cleanrl``, ``sb3``, ..."""
    arguments: tuple[str, ...] = ()
    """neuroplug: its overrides; cleanrl: the script's arguments beyond task, steps, seed."""
    script: str = ""
    """cleanrl: the script's file name in the checkout's ``cleanrl/`` folder."""


@dataclass(frozen=True)
class Comparison:
    """One method on one task: ours beside its references at equal env steps."""

    method: str
    task: str
    """The gymnasium id both sides train on (ours through its own env family)."""
    steps: int
    seeds: tuple[int, ...]
    bin_steps: int
    """Curves are the mean training episode return per this many env steps; the final
    score is the last bin's."""
    ours: Side
    references: tuple[Side, ...]
    notes: str = ""
    sides: tuple[Side, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sides", (self.ours, *self.references))

    @property
    def key(self) -> str:
        """``<method>/<task>``: where its results live under ``results/parity/``."""
        return f"{self.method}/{self.task}"


MUJOCO_ENVS = {"Hopper-v4": "hopper", "HalfCheetah-v4": "halfcheetah"}
"""gymnasium ids -> neuroplug's env configs (EnvPool's versions of the same tasks)."""

OFF_POLICY_SEEDS = (1, 2, 3)
"""100k steps of SAC or TD3 cost 20-40 minutes on one core: three seeds (issue 68)."""


def _off_policy(method: str, task: str) -> Comparison:
    """``td3``/``sac`` beside CleanRL's ``<method>_continuous_action.py`` (our defaults
    are its settings), 100k env steps, bins of 10k (our segments)."""
    return Comparison(
        method=method,
        task=task,
        steps=100_000,
        seeds=OFF_POLICY_SEEDS,
        bin_steps=10_000,
        ours=Side("neuroplug", (f"algo={method}", f"env={MUJOCO_ENVS[task]}")),
        references=(Side("cleanrl", script=f"{method}_continuous_action.py"),),
        notes=(
            "CleanRL's settings on both sides (ours: EnvPool's MuJoCo task, CleanRL: "
            "gymnasium 0.29.1's); training episode returns, as CleanRL logs them."
        ),
    )


COMPARISONS: tuple[Comparison, ...] = (
    _off_policy("sac", "HalfCheetah-v4"),
    _off_policy("sac", "Hopper-v4"),
    _off_policy("td3", "HalfCheetah-v4"),
    _off_policy("td3", "Hopper-v4"),
)
"""Every comparison, in the order the suite runs them."""


def select(only: list[str] | None) -> list[Comparison]:
    """The comparisons whose method or ``method/task`` key is in ``only`` (all without)."""
    if not only:
        return list(COMPARISONS)
    chosen = [c for c in COMPARISONS if c.method in only or c.key in only]
    known = sorted({c.method for c in COMPARISONS} | {c.key for c in COMPARISONS})
    unknown = [name for name in only if not any(name in (c.method, c.key) for c in chosen)]
    if unknown:
        raise SystemExit(
            f"--only: no comparison named {', '.join(unknown)}; known: {', '.join(known)}"
        )
    return chosen
