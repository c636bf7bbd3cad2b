"""What a kind of env pool is: how a config names one of its envs, how the env is described
and how its pools are built, behind one step contract.

neuroplug ships two kinds: EnvPool's C++ pools (:mod:`neuroplug.envs.envpool_pools`) and
gymnasium envs, in this process or in worker processes
(:mod:`neuroplug.envs.gymnasium_pools`). A package adds a simulator (a multi-agent one,
MuJoCo Playground, Genesis) as one more kind, registered under the ``neuroplug.env_pools``
entry-point group; nothing else in neuroplug names a kind (:mod:`neuroplug.envs.pool_kinds`
picks the one that serves a config).

The step contract a kind's pools keep is EnvPool's asynchronous one, one slot per seed
(:class:`~neuroplug.envs.gymnasium_pool.GymnasiumPool` keeps it for gymnasium envs):
``async_reset()`` resets every slot (slot ``i`` seeded by ``seeds[i]`` at its first reset
only); ``send(actions, env_ids)`` steps the slots named, a slot whose episode has ended
resetting instead (its action ignored); ``recv()`` returns gymnasium's ``(observations,
rewards, terminated, truncated, info)`` for the oldest ``send``, ``info["env_id"]`` naming
each row's slot; ``close()``. The evaluation engine plays through those calls; the
learners' sampler through the kind's :meth:`PoolKind.step_batches`, the same steps as
:class:`~neuroplug.envs.raw_steps.StepBatch` arrays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

    from neuroplug.config.schema import EnvConfig
    from neuroplug.envs.family import EnvFamily
    from neuroplug.envs.spec import EnvSpec


class PoolKind(ABC):
    """A kind of env pool (see the module docstring)."""

    name: ClassVar[str]
    """The kind's name (the start-up line and errors say it)."""

    @abstractmethod
    def serves(self, config: EnvConfig) -> bool:
        """Whether ``config`` names an env of this kind (gymnasium: ``env.id`` or
        ``env.entry_point``)."""

    @abstractmethod
    def make_spec(self, config: EnvConfig) -> EnvSpec:
        """Check ``config`` and describe its env (:class:`EnvSpec` with ``pool_kind`` this
        kind), refusing a bad value in one line naming its field."""

    @abstractmethod
    def make_pool(
        self, spec: EnvSpec, seeds: np.ndarray, num_threads: int, overrides: dict[str, Any]
    ) -> Any:
        """A pool of ``spec``'s env with one slot per seed, keeping the step contract;
        ``overrides`` replace make settings of the spec for this pool only (a learner's
        ``episodic_life``, the step cap watch plays with); ``num_threads`` the threads
        it may step on (0: as many as are available)."""

    @abstractmethod
    def info_keys(self, spec: EnvSpec) -> frozenset[str]:
        """The entries of a step's ``info`` that say what the env did (behaviour descriptors
        read them), the kind's own bookkeeping left out."""

    def step_batches(self, pool: Any, family: EnvFamily) -> Any:
        """The learners' step driver of ``pool`` (``reset``, ``send(actions, env_ids)``,
        ``recv()`` giving a :class:`~neuroplug.envs.raw_steps.StepBatch`, ``close``), the
        true score and game over read by ``family``'s rule; by default the pool's own
        ``step_batches``, as a gymnasium pool has."""
        return pool.step_batches(family.score_info_key, family.game_over_info_key)

    def stepping(self, spec: EnvSpec) -> str:
        """Where the pools step their envs, for the start-up line ("" says nothing)."""
        return ""
