"""Whether an evaluation's episodes in flight fit in memory, asked before anything runs.

The evaluation engine plays ``min(lanes, P x E)`` episodes at once (``scheduler.max_envs``,
or the env family's ``engine_lanes``). Each holds its network's recurrent state (a
``causal_lm``'s KV cache: layers x 2 x context x d_model floats, read, written anew and
kept) and, in factored low rank, its member's factors of every low-rank matrix, gathered
per row. A text task's P members x B prompts can need more than the machine has: the run
is refused then, saying how much and what to lower, rather than dying in the first
generation.
"""

from __future__ import annotations

from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.network import Network
from neuroplug.population.lowrank import lowrank_for
from neuroplug.runtime.devices import gib, refuse_unless_it_fits

STATE_COPIES = 3
"""A step holds a lane's state three times: the one it read, the one it writes, and the
engine's copy of it kept for the next step."""


def lane_bytes(network: Network, algo) -> int:
    """Memory one episode in flight holds beyond the shared model, in bytes."""
    floats = STATE_COPIES * network.state_size
    if getattr(algo, "perturbation", "full") == "lowrank":
        lowrank = lowrank_for(network.layout, algo.rank, algo.lowrank_min_size)
        floats += lowrank.rank * sum(m.rows + m.cols for m in lowrank.matrices)
    return 4 * floats


def refuse_lanes_beyond_memory(
    network: Network, env: EnvSpec, algo, scheduler, population_size: int,
    available: int | None = None,
) -> None:  # fmt: skip
    """Refuse, naming ``scheduler.max_envs``, an evaluation whose episodes in flight need
    more than the memory available now (``available``: bytes, for tests)."""
    per_lane = lane_bytes(network, algo)
    if per_lane == 0:
        return
    episodes = population_size * algo.episodes_per_member
    lanes = min(getattr(scheduler, "max_envs", None) or env.family.engine_lanes, episodes)

    def fewer(fits: int) -> str:
        most = max(1, fits // per_lane)
        return (
            f"scheduler.max_envs={most} or fewer episodes in flight (the evaluation then "
            f"plays its {episodes:,} in turns), or a smaller net.kwargs.d_model, context or "
            "algo.rank"
        )

    refuse_unless_it_fits(
        "scheduler.max_envs",
        lanes * per_lane,
        f"{lanes:,} episodes in flight ({population_size} members x "
        f"{algo.episodes_per_member} episodes, {gib(per_lane) if per_lane >= 2**30 else f'{per_lane / 2**20:.2f} MiB'} "
        "each in states and factors)",
        fewer,
        available=available,
    )
