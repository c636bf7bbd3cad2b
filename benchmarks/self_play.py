"""Self-play's evidence on ``env=pong_duel``: PPO against its own pool (itself, 8 frozen
snapshots, the scripted ``tracking_bot``), seeds side by side; then each run's deployed
policy against the bot and against random play in 200 greedy games
(``neuroplug.tools.match``), and the rating and win rates over training.

::

    python benchmarks/self_play.py                 # every seed not done, then the summary
    python benchmarks/self_play.py --summary       # the summary of what is done

Writes ``benchmarks/results/self_play/pong_duel/``: each seed's run (``metrics.csv``,
``tournament.csv``, ``config.yaml``, the policy file; its checkpoints deleted once done),
``match_seed<k>.json``, ``curves.png`` and ``summary.md``. A seed stopped part-way resumes
from its last checkpoint.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence  # noqa: E402
from machine import describe  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "self_play" / "pong_duel"
BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
SEEDS = (1, 2, 3)
FRAMES = 2_000_000
SETTINGS = [
    "algo=ppo", "env=pong_duel", "selfplay=pool", f"selfplay.bots=[{BOT}]",
    "algo.num_envs=16", "algo.gamma=0.99", "algo.gae_lambda=0.95", "algo.entropy_coef=0.01",
    f"run.max_frames={FRAMES}", "run.eval_interval=0", "run.checkpoint_interval=10",
    "logger=console",
]  # fmt: skip
"""PPO at CleanRL's discount, GAE and entropy bonus (the discrete preset's RL Zoo CartPole
settings, gamma 0.98, lambda 0.8 and no entropy bonus, did not learn to return the ball)."""
GAMES = 200


def run_seed(seed: int) -> Path:
    """Train seed ``seed`` (resumed where it stopped) and match its policy."""
    out = RESULTS / f"seed{seed}"
    done = out / "checkpoints" / "best_policy.pt"
    if not (out / "finished").exists():
        resume = (out / "checkpoints" / "latest.pt").exists()
        target = f"run.resume={out}" if resume else f"run.output_dir={out}"
        command = [sys.executable, "-m", "neuroplug", *SETTINGS, f"run.seed={seed}", target]
        subprocess.run(command, check=True)
        (out / "finished").write_text("")
    for opponent, name in ((BOT, "tracking_bot"), ("random", "random")):
        path = RESULTS / f"match_seed{seed}_{name}.json"
        if not path.exists():
            subprocess.run(
                [sys.executable, "-m", "neuroplug.tools.match", str(out), "--opponent", opponent,
                 "--games", str(GAMES), "--seed", "1000", "--json", str(path)],
                check=True,
            )  # fmt: skip
    if done.exists():  # keep the policy file, drop the checkpoints
        policy = out / "policy.pt"
        shutil.copy(done, policy)
        shutil.rmtree(out / "checkpoints")
    return out


def rows_of(seed: int) -> list[dict[str, str]]:
    return list(csv.DictReader((RESULTS / f"seed{seed}" / "metrics.csv").open()))


def summary() -> None:
    """``curves.png`` and ``summary.md`` from the finished seeds."""
    seeds = [seed for seed in SEEDS if (RESULTS / f"match_seed{seed}_random.json").exists()]
    drawn, axes = evidence.figure()
    lines = [
        "# Self-play on pong_duel: PPO against its own pool",
        "",
        f"Machine: {describe()}. Settings: `python -m neuroplug {' '.join(SETTINGS)}`, "
        f"seeds {', '.join(map(str, seeds))}. The pool: the learner itself (half the games), "
        "its 8 newest snapshots (one a segment) and the tracking bot, drawn by PFSP.",
        "",
        "| seed | rating (mu) first / last segment | training games against the bot: "
        "played, won (whole run) | deployed policy against the bot | against random play |",
        "|---|---|---|---|---|",
    ]
    for seed in seeds:
        rows = rows_of(seed)
        frames = np.array([float(row["frames"]) for row in rows])
        rating = np.array([float(row["algo/selfplay/rating"]) for row in rows])
        won = np.array([float(row["algo/selfplay/win_rate/tracking_bot"] or "nan") for row in rows])
        window = 20
        with warnings.catch_warnings():  # windows without a game against the bot: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            smooth = np.array(
                [np.nanmean(won[max(0, i - window + 1) : i + 1]) for i in range(len(won))]
            )
        axes[0].plot(frames, rating, label=f"seed {seed}")
        axes[1].plot(frames, smooth, label=f"seed {seed}")
        matches = {
            name: json.loads((RESULTS / f"match_seed{seed}_{name}.json").read_text())
            for name in ("tracking_bot", "random")
        }

        table = list(csv.DictReader((RESULTS / f"seed{seed}" / "tournament.csv").open()))
        bot = [row for row in table if row["opponent"] == "tracking_bot"][-1]
        played = f"{bot['games_total']}, {float(bot['win_rate_total']):.0%}"
        lines.append(
            f"| {seed} | {rating[0]:.1f} / {rating[-1]:.1f} | {played} | "
            f"{evidence.match_result(matches['tracking_bot'])} | {evidence.match_result(matches['random'])} |"
        )
    axes[0].set_ylabel("learner's rating (OpenSkill mu)")
    axes[1].set_ylabel("training win rate against the bot")
    axes[1].set_title("the stochastic policy, mean of 20 segments", fontsize=9)
    for axis in axes:
        axis.set_xlabel("frames (every agent's steps)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    lines += [
        "",
        "Score rate: (wins + draws / 2) / games of the deployed (greedy) policy, seats "
        "alternating, 95% Wilson interval (`neuroplug.tools.match`, game seeds from 1000). "
        "Training win rates are the stochastic policy's games against the bot when PFSP drew "
        "it (a few a segment, fewer once it is beaten: PFSP plays it less). Ratings are relative to the pool's own entries (a snapshot "
        "starts at the learner's rating when it is taken), so they measure progress against "
        "its past, not an absolute scale.",
        "",
        "![rating and win rate](curves.png)",
    ]
    evidence.write_summary(RESULTS, drawn, lines, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", action="store_true", help="only the summary")
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS))
    arguments = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not arguments.summary:
        for seed in arguments.seeds:
            run_seed(seed)
    summary()


if __name__ == "__main__":
    main()
