"""Two populations coevolving on ``env=pong_duel``: OpenAI ES with a population per paddle
(``env.policy_mapping=per_agent``), never playing the scripted ``tracking_bot``; two arms:
``members`` (each paddle's members play the other paddle's members) and ``halls``
(``selfplay=pool``: half the games against the other paddle's hall of fame). Every
``CHUNK`` generations (the run resumed from its checkpoint, chunk by chunk) each paddle's
deployed policy plays the bot and random play on its own seat
(``neuroplug.tools.match --policy``).

::

    python benchmarks/coevolution_populations.py            # every seed not done, then the summary
    python benchmarks/coevolution_populations.py --summary  # the summary of what is done

Writes ``benchmarks/results/self_play/pong_duel_es_two_populations/``: each arm's seeds'
runs (``<arm>/seed<k>/``: ``metrics.csv``, ``config.yaml``, the policy file,
``matches.json`` with every chunk's games), ``curves.png`` and ``summary.md``. A seed
stopped part-way resumes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence  # noqa: E402
from machine import describe  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "self_play" / "pong_duel_es_two_populations"
BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
SEEDS = (1, 2, 3)
GENERATIONS = 150
CHUNK = 25
PADDLES = ("paddle_0", "paddle_1")
SETTINGS = [
    "algo=es", "env=pong_duel", "env.policy_mapping=per_agent", "run.eval_interval=0",
    "run.eval_episodes=20", f"run.checkpoint_interval={CHUNK}", "logger=console",
]  # fmt: skip
"""ES at its defaults (64 members a paddle, one game a member)."""
ARMS = {"members": [], "halls": ["selfplay=pool"]}
"""``halls``: the pool's defaults, half of a member's games against the other paddle's 8
newest snapshots (PFSP), half against its members."""
GAMES = 100


def _match(run: Path, paddle: str, opponent: str) -> dict:
    """``paddle``'s policy of ``run`` against ``opponent``, on its own seat."""
    path = run / ".match.json"
    subprocess.run(
        [sys.executable, "-m", "neuroplug.tools.match", str(run), "--policy", paddle,
         "--opponent", opponent, "--games", str(GAMES), "--seed", "1000", "--json", str(path)],
        check=True,
    )  # fmt: skip
    result = json.loads(path.read_text())
    path.unlink()
    return result


def run_seed(arm: str, seed: int) -> Path:
    """Evolve seed ``seed`` of ``arm`` chunk by chunk (resumed where it stopped), matching
    each chunk."""
    out = RESULTS / arm / f"seed{seed}"
    log = out / "matches.json"
    matches = json.loads(log.read_text()) if log.exists() else []
    while not (out / "finished").exists():
        done = len(matches) * CHUNK
        target = done + CHUNK
        resume = (out / "checkpoints" / "latest.pt").exists()
        where = f"run.resume={out}" if resume else f"run.output_dir={out}"
        command = [sys.executable, "-m", "neuroplug", *SETTINGS, *ARMS[arm], f"run.seed={seed}",
                   f"run.max_generations={target}", where]  # fmt: skip
        subprocess.run(command, check=True)
        matches.append(
            {
                "generation": target,
                **{
                    f"{paddle}_{name}": _match(out, paddle, opponent)
                    for paddle in PADDLES
                    for opponent, name in ((BOT, "tracking_bot"), ("random", "random"))
                },
            }
        )
        log.write_text(json.dumps(matches, indent=1) + "\n")
        if target >= GENERATIONS:
            shutil.copy(out / "checkpoints" / "best_policy.pt", out / "policy.pt")
            shutil.rmtree(out / "checkpoints")
            (out / "finished").write_text("")
    return out


def summary() -> None:
    """``curves.png`` and ``summary.md`` from the seeds with matches."""
    done = [
        (arm, seed)
        for arm in ARMS
        for seed in SEEDS
        if (RESULTS / arm / f"seed{seed}" / "matches.json").exists()
    ]
    drawn, axes = evidence.figure()
    lines = [
        "# Two populations coevolving on pong_duel: ES, a population per paddle",
        "",
        f"Machine: {describe()}. Settings: `python -m neuroplug {' '.join(SETTINGS)} "
        f"run.max_generations=...`, run {CHUNK} generations at a time; arm `halls` adds "
        "`selfplay=pool`. Neither population ever plays the bot: each member's games are "
        "against the other paddle's members (and, in `halls`, its hall of fame); after each "
        f"chunk every paddle's deployed policy (the ES center) plays {GAMES} greedy games on "
        "its own seat against the tracking bot and against random play.",
        "",
        "| arm | seed | generations | paddle | score rate against the bot, by chunk | at the "
        "end, against the bot | against random play |",
        "|---|---|---|---|---|---|---|",
    ]
    colours = {arm: colour for arm, colour in zip(ARMS, ("tab:blue", "tab:orange"), strict=True)}
    for arm, seed in done:
        run = RESULTS / arm / f"seed{seed}"
        matches = json.loads((run / "matches.json").read_text())
        generations = [entry["generation"] for entry in matches]
        for paddle, style in zip(PADDLES, ("-", "--"), strict=True):
            rates = [entry[f"{paddle}_tracking_bot"]["score_rate"] for entry in matches]
            label = f"{arm} seed {seed} {paddle}"
            axes[0].plot(generations, rates, style, marker="o", color=colours[arm], label=label)
            against_random = [entry[f"{paddle}_random"]["score_rate"] for entry in matches]
            axes[1].plot(generations, against_random, style, marker="o", color=colours[arm])
            last = matches[-1]
            lines.append(
                f"| {arm} | {seed} | {generations[-1]} | {paddle} | "
                f"{' / '.join(f'{rate:.2f}' for rate in rates)} | "
                f"{evidence.match_result(last[f'{paddle}_tracking_bot'])} | "
                f"{evidence.match_result(last[f'{paddle}_random'])} |"
            )
    axes[0].set_ylabel("deployed policy's score rate against the bot")
    axes[1].set_ylabel("deployed policy's score rate against random play")
    for axis in axes:
        axis.set_xlabel("generation")
    axes[0].legend(fontsize=6)
    evidence.write_summary(RESULTS, drawn, lines)


if __name__ == "__main__":
    evidence.main(
        __doc__.splitlines()[0],
        RESULTS,
        lambda: [run_seed(arm, seed) for seed in SEEDS for arm in ARMS],
        summary,
    )
