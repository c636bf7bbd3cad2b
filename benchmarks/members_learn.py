"""Does a member learn from the games it plays in another member's league? PBT over self-play
on pong_duel, each member in the other's pool, with ``selfplay.members_learn`` on and off at
equal frames; the deployed policy then plays the tracking bot (``neuroplug.tools.match``).

    python benchmarks/members_learn.py --frames 1000000 --seeds 1 2 3

Each run is resumable (a run dir without ``finished`` is resumed); the summary is rewritten
from whatever has finished.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

from machine import describe

BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
BOT_NAME = "tracking_bot"
"""The bot's name in the tournament table."""
ARMS = {"learn": "selfplay.members_learn=true", "own": "selfplay.members_learn=false"}


def command(frames: int, seed: int, arm: str, out: Path) -> list[str]:
    """The run's command line."""
    return [
        sys.executable, "-m", "neuroplug", "algo=pbt", "algo.learner=ppo", "algo.members=2",
        "algo.member.num_envs=8", "env=pong_duel", "selfplay=pool", "selfplay.members=true",
        f"selfplay.bots=[{BOT}]", ARMS[arm], f"run.max_frames={frames}", f"run.seed={seed}",
        "run.eval_interval=0", "run.checkpoint_interval=5", "logger=none",
        f"run.output_dir={out}",
    ]  # fmt: skip


def run(frames: int, seed: int, arm: str, root: Path) -> dict:
    """Train (or resume) one arm and seed, then match its deployed policy with the bot."""
    out = root / f"{arm}_seed{seed}"
    if not (out / "finished").exists():
        resume = [f"run.resume={out}"] if (out / "checkpoints").exists() else []
        subprocess.run([*command(frames, seed, arm, out), *resume], check=True)
    result = out / "match_tracking_bot.json"
    if not result.exists():
        subprocess.run(
            [sys.executable, "-m", "neuroplug.tools.match", str(out), "--opponent", BOT,
             "--games", "100", "--seed", "1000", "--json", str(result)],
            check=True,
        )  # fmt: skip
    shutil.rmtree(out / "checkpoints", ignore_errors=True)  # for resuming only
    match = json.loads(result.read_text())
    return {"arm": arm, "seed": seed, **match, **bot_games(out / "tournament.csv")}


def bot_games(table: Path) -> dict:
    """The members' training games against the bot: the share won over the whole run and
    over its last quarter of segments (both members' games pooled)."""
    rows = [row for row in csv.DictReader(table.open()) if row["opponent"] == BOT_NAME]
    last = max(int(row["segment"]) for row in rows)

    def won(chosen: list[dict]) -> float:
        games = sum(int(row["games"]) for row in chosen)
        return sum(float(row["wins"]) + 0.5 * float(row["draws"]) for row in chosen) / games

    late = [row for row in rows if int(row["segment"]) > 0.75 * last]
    return {"bot_won": won(rows), "bot_won_late": won(late), "segments": last}


def pooled(rows: list[dict]) -> list[str]:
    """Per arm: the seeds whose deployed policy beat the bot (score rate above 0.5), and
    the mean of the training games won in the last quarter."""
    lines = []
    for arm in ARMS:
        mine = [row for row in rows if row["arm"] == arm]
        if mine:
            beat = sum(row["score_rate"] > 0.5 for row in mine)
            late = sum(row["bot_won_late"] for row in mine) / len(mine)
            lines.append(
                f"- {arm}: the deployed policy beat the bot in {beat} of {len(mine)} seeds; "
                f"training games won in the last quarter, mean over seeds {late:.2f}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/members_learn"))
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in arguments.seeds:
        for arm in ARMS:
            rows.append(run(arguments.frames, seed, arm, arguments.out.resolve()))
            lines = [
                "# Members learning from their games in each other's leagues",
                "",
                f"Machine: {describe()}. Frames: {arguments.frames:,} (both members). Command:",
                "`python "
                + " ".join(command(arguments.frames, 0, "learn", Path("DIR"))[1:])
                .replace("run.seed=0", "run.seed=SEED")
                .replace(ARMS["learn"], "selfplay.members_learn=true|false")
                + "`",
                "",
                "| arm | seed | training games against the bot won: whole run, last quarter | "
                "deployed policy against the bot (score rate [95% CI]) |",
                "|---|---|---|---|",
                *(
                    f"| {row['arm']} | {row['seed']} | {row['bot_won']:.2f}, "
                    f"{row['bot_won_late']:.2f} | {row['score_rate']:.3f} "
                    f"[{row['interval'][0]:.3f}, {row['interval'][1]:.3f}] "
                    f"({row['games']} games) |"
                    for row in rows
                ),
                "",
                *pooled(rows),
            ]
            (arguments.out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
