"""How a PPO rollout becomes minibatches: its valid transitions flattened (:class:`Batch`),
or, for a recurrent core, cut into chunks of whole steps (:class:`Chunks`), and the order
of E epochs of M minibatches (:func:`minibatch_orders`), one schedule for a lone learner
and for members side by side (:mod:`neuroplug_learners.ppo_stacked`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch


def minibatch_orders(
    size: int, epochs: int, minibatches: int, generators: Sequence[torch.Generator], device
) -> Iterator[tuple[torch.Tensor | None, bool]]:
    """E epochs of M minibatches of ``size`` rows (transitions, or chunks) for each of K
    learners: each minibatch's shuffled row indices ``(K, size // M)``, each learner's
    from its own generator (None: every row, in order, where one minibatch holds them all,
    its losses means whose order is moot), and whether it is in the last epoch."""
    step = max(1, size // minibatches)
    for epoch in range(epochs):
        last = epoch == epochs - 1
        if step == size:
            yield None, last
            continue
        orders = torch.stack(
            [torch.randperm(size, generator=generator, device=device) for generator in generators]
        )
        for start in range(0, size - step + 1, step):
            yield orders[:, start : start + step], last


@dataclass
class Batch:
    """A rollout's valid transitions, flattened, with their advantages and targets."""

    observations: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    def __len__(self) -> int:
        return len(self.log_probs)

    def scalars(self) -> torch.Tensor:
        """``(n, 4)``: log-probs, values, advantages and returns side by side, so a minibatch
        gathers them with one index instead of four."""
        return torch.stack([self.log_probs, self.values, self.advantages, self.returns], 1)


@dataclass
class Chunks:
    """A recurrent rollout cut into chunks of R steps of one env (Sample Factory's
    recurrence), chunk-major: ``(R, C, ...)`` with C = T/R * N chunks."""

    observations: torch.Tensor
    actions: torch.Tensor
    scalars: torch.Tensor
    """``(R, C, 4)``: log-probs, values, advantages, returns (as :meth:`Batch.scalars`)."""
    valid: torch.Tensor
    """``(R, C)`` bool: the steps that count (not EnvPool's reset steps)."""
    states: torch.Tensor
    """``(C, H)``: the core state each chunk starts from (stored when acting)."""
    starts: torch.Tensor
    """``(R, C)`` bool: a learner episode begins at the step (its state is zeroed)."""

    @property
    def count(self) -> int:
        """C: how many chunks."""
        return self.states.shape[0]


def chunked(rollout, advantages: torch.Tensor, returns: torch.Tensor, length: int) -> Chunks:
    """``rollout`` (with its core states) cut into chunks of ``length`` steps."""
    steps = rollout.valid.shape[0]

    def cut(tensor: torch.Tensor) -> torch.Tensor:
        # (T, N, ...) -> (T/R, R, N, ...) -> (R, T/R, N, ...) -> (R, C, ...)
        shaped = tensor.reshape(steps // length, length, *tensor.shape[1:]).transpose(0, 1)
        return shaped.reshape(length, -1, *tensor.shape[2:])

    scalars = torch.stack([rollout.log_probs, rollout.values, advantages, returns], 2)
    return Chunks(
        cut(rollout.observations),
        cut(rollout.actions),
        cut(scalars),
        cut(rollout.valid),
        cut(rollout.states)[0],
        cut(rollout.starts),
    )


def flatten(rollout, advantages: torch.Tensor, returns: torch.Tensor) -> Batch:
    """The valid transitions of ``rollout`` as one :class:`Batch`."""
    rows = torch.nonzero(rollout.valid.reshape(-1)).squeeze(1)

    def flat(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.reshape(-1, *tensor.shape[2:])[rows]

    return Batch(
        flat(rollout.observations),
        flat(rollout.actions),
        flat(rollout.log_probs),
        flat(rollout.values),
        flat(advantages),
        flat(returns),
    )
