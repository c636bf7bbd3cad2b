"""What one step of a two-player Atari world costs: SuperSuit's wrappers (as CleanRL's
``ppo_pettingzoo_ma_atari.py`` makes its frames) against neuroplug's :class:`AtariFrames`
(the same frames), no policy.

    python benchmarks/ma_atari_step_cost.py [--game pong_v3 --steps 3000 --rounds 3]

Each round steps each side ``--steps`` times under the same random actions (a new game
where one ends), the sides taking turns; the median over rounds of milliseconds per world
step (4 frames, both agents) is reported. Writes ``results/ma_atari_step_cost.md``.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from pathlib import Path

import numpy as np
from machine import describe

from neuroplug.envs.multi_agent.atari import parallel_env, supersuit_frames

RESULTS = Path(__file__).resolve().parent / "results"


def step_cost(env, steps: int) -> float:
    """Seconds per world step over ``steps`` random-action steps."""
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    seconds = 0.0
    for _ in range(steps):
        actions = {agent: int(rng.integers(env.action_space(agent).n)) for agent in env.agents}
        started = time.perf_counter()
        env.step(actions)
        seconds += time.perf_counter() - started
        if not env.agents:
            env.reset()
    return seconds / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--game", default="pong_v3")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sides = {
        "SuperSuit's wrappers": supersuit_frames(args.game),
        "AtariFrames": parallel_env(args.game),
    }
    costs: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, env in sides.items():
            costs[name].append(step_cost(env, args.steps))
    theirs = statistics.median(costs["SuperSuit's wrappers"])
    rows = [
        f"| {name} | {statistics.median(each) * 1e3:.3f} "
        f"({', '.join(f'{cost * 1e3:.3f}' for cost in each)}) | "
        f"{theirs / statistics.median(each):.2f}x |"
        for name, each in costs.items()
    ]
    text = "\n".join([
        f"# A two-player Atari world's step ({args.game})", "",
        f"{datetime.date.today()}, machine: {describe()}. One thread, {args.steps:,} random-action steps a side a "
        f"round, {args.rounds} rounds taking turns (`python benchmarks/ma_atari_step_cost.py`).",
        "", "| frames made by | ms a world step (median; each round) | speed-up |",
        "|---|---|---|", *rows,
    ])  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ma_atari_step_cost.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
