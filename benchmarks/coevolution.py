"""Coevolution's evidence on ``env=pong_duel``: OpenAI ES whose members play each other and
a hall of fame of the deployed policy (``selfplay=pool``), never the scripted
``tracking_bot``; every 20 generations the deployed policy plays the bot (100 games,
``selfplay.eval_opponent``), and at the end 200 greedy games against the bot and against
random play (``neuroplug.tools.match``).

::

    python benchmarks/coevolution.py               # every seed not done, then the summary
    python benchmarks/coevolution.py --summary     # the summary of what is done

Writes ``benchmarks/results/self_play/pong_duel_es/``: each seed's run (``metrics.csv``,
``tournament.csv``, ``config.yaml``, the policy file), ``match_seed<k>_<opponent>.json``,
``curves.png`` and ``summary.md``. A seed stopped part-way resumes from its checkpoint.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence  # noqa: E402
from machine import describe  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "self_play" / "pong_duel_es"
PPO = RESULTS.parent / "pong_duel"
"""PPO's self-play runs (``benchmarks/self_play.py``): each seed's policy plays ours."""
BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
SEEDS = (1, 2, 3)
GENERATIONS = 300
SETTINGS = [
    "algo=es", "env=pong_duel", "selfplay=pool", f"selfplay.eval_opponent={BOT}",
    f"run.max_generations={GENERATIONS}", "run.eval_interval=20", "run.eval_episodes=100",
    "run.checkpoint_interval=20", "logger=console",
]  # fmt: skip
"""ES at its defaults (population 64, one game a member); the pool at its defaults: half
the games against another member, half against the 8 newest snapshots, drawn by PFSP."""
GAMES = 200


def run_seed(seed: int) -> Path:
    """Evolve seed ``seed`` (resumed where it stopped) and match its policy."""
    out = RESULTS / f"seed{seed}"
    if not (out / "finished").exists():
        resume = (out / "checkpoints" / "latest.pt").exists()
        target = f"run.resume={out}" if resume else f"run.output_dir={out}"
        command = [sys.executable, "-m", "neuroplug", *SETTINGS, f"run.seed={seed}", target]
        subprocess.run(command, check=True)
        (out / "finished").write_text("")
    opponents = [(BOT, "tracking_bot"), ("random", "random")]
    if (PPO / f"seed{seed}" / "policy.pt").exists():
        opponents.append((str(PPO / f"seed{seed}" / "policy.pt"), "ppo"))
    # The run's dir while its checkpoints are there, its policy file once they are gone.
    source = out / "policy.pt" if (out / "policy.pt").exists() else out
    for opponent, name in opponents:
        path = RESULTS / f"match_seed{seed}_{name}.json"
        if not path.exists():
            subprocess.run(
                [sys.executable, "-m", "neuroplug.tools.match", str(source), "--opponent", opponent,
                 "--games", str(GAMES), "--seed", "1000", "--json", str(path)],
                check=True,
            )  # fmt: skip
    done = out / "checkpoints" / "best_policy.pt"
    if (
        done.exists() and (RESULTS / f"match_seed{seed}_random.json").exists()
    ):  # keep the policy file, drop the checkpoints
        shutil.copy(done, out / "policy.pt")
        shutil.rmtree(out / "checkpoints")
    return out


def summary() -> None:
    """``curves.png`` and ``summary.md`` from the finished seeds."""
    seeds = [seed for seed in SEEDS if (RESULTS / f"match_seed{seed}_random.json").exists()]
    drawn, axes = evidence.figure()
    lines = [
        "# Coevolution on pong_duel: ES against itself and its hall of fame",
        "",
        f"Machine: {describe()}. Settings: `python -m neuroplug {' '.join(SETTINGS)}`, "
        f"seeds {', '.join(map(str, seeds))}. The population never plays the bot: its games "
        "are against its own members and its hall of fame; the bot only evaluates.",
        "",
        "| seed | rating (mu) first / last generation | against the bot, first / best / last "
        "evaluation (100 games) | deployed policy against the bot | against random play | "
        "against PPO's self-play policy of the same seed |",
        "|---|---|---|---|---|---|",
    ]

    for seed in seeds:
        rows = list(csv.DictReader((RESULTS / f"seed{seed}" / "metrics.csv").open()))
        generations = np.array([float(row["generation"]) for row in rows])
        rating = np.array([float(row["algo/selfplay/rating"]) for row in rows])
        evaluated = [row for row in rows if row.get("eval/win_rate")]
        at = [float(row["generation"]) for row in evaluated]
        rate = [float(row["eval/win_rate"]) for row in evaluated]
        axes[0].plot(generations, rating, label=f"seed {seed}")
        axes[1].plot(at, rate, marker="o", label=f"seed {seed}")
        matches = {
            name: json.loads(path.read_text())
            for name in ("tracking_bot", "random", "ppo")
            if (path := RESULTS / f"match_seed{seed}_{name}.json").exists()
        }
        against_ppo = evidence.match_result(matches["ppo"]) if "ppo" in matches else "not played"
        lines.append(
            f"| {seed} | {rating[0]:.1f} / {rating[-1]:.1f} | {rate[0]:.2f} / {max(rate):.2f} / "
            f"{rate[-1]:.2f} | {evidence.match_result(matches['tracking_bot'])} | {evidence.match_result(matches['random'])} | "
            f"{against_ppo} |"
        )
    axes[0].set_ylabel("population's rating (OpenSkill mu)")
    axes[1].set_ylabel("deployed policy's score rate against the bot")
    for axis in axes:
        axis.set_xlabel("generation")
        axis.legend()
    evidence.write_summary(RESULTS, drawn, lines)


if __name__ == "__main__":
    evidence.main(
        __doc__.splitlines()[0], RESULTS, lambda: [run_seed(seed) for seed in SEEDS], summary
    )
