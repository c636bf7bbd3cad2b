"""A policy per paddle on ``env=pong_duel`` (``env.policy_mapping=per_agent``), never
playing the scripted ``tracking_bot``; two arms each: ``members`` (each paddle's policy
plays only the other paddle's as it is now) and ``halls`` (``selfplay=pool``: half the
games against the other paddle's hall of fame). Two studies:

- ``es``: OpenAI ES with a population per paddle (its members against the other
  population's members, or its hall), 150 generations;
- ``ppo``: a PPO learner per paddle (`neuroplug/rl/self_play/team_league.py`), 2M frames.

Every chunk (the run resumed from its checkpoint, chunk by chunk) each paddle's deployed
policy plays the bot and random play on its own seat (``neuroplug.tools.match --policy``).

::

    python benchmarks/coevolution_populations.py [--study es|ppo]            # not done, then the summary
    python benchmarks/coevolution_populations.py [--study es|ppo] --summary  # the summary

Writes ``benchmarks/results/self_play/pong_duel_<es|ppo>_two_populations/``: each arm's
seeds' runs (``<arm>/seed<k>/``: ``metrics.csv``, ``config.yaml``, the policy file,
``matches.json`` with every chunk's games), ``curves.png`` and ``summary.md``. A seed
stopped part-way resumes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evidence  # noqa: E402
from machine import describe  # noqa: E402

BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
SEEDS = (1, 2, 3)
PADDLES = ("paddle_0", "paddle_1")
GAMES = 100


@dataclass(frozen=True)
class Study:
    """One family's runs: its settings, its budget key, and how it is chunked."""

    title: str
    results: Path
    settings: tuple[str, ...]
    budget: str
    """The budget's key (``run.max_generations`` or ``run.max_frames``)."""
    total: int
    chunk: int
    unit: str
    """The budget's unit, in words."""
    arms: dict[str, tuple[str, ...]]
    about: str


RESULTS = Path(__file__).resolve().parent / "results" / "self_play"
STUDIES = {
    "es": Study(
        title="Two populations coevolving on pong_duel: ES, a population per paddle",
        results=RESULTS / "pong_duel_es_two_populations",
        settings=(
            "algo=es",
            "env=pong_duel",
            "env.policy_mapping=per_agent",
            "run.eval_interval=0",
            "run.eval_episodes=20",
            "run.checkpoint_interval=25",
            "logger=console",
        ),  # fmt: skip
        budget="run.max_generations",
        total=150,
        chunk=25,
        unit="generation",
        # halls: the pool's defaults, half of a member's games against the other paddle's
        # 8 newest snapshots (PFSP), half against its members.
        arms={"members": (), "halls": ("selfplay=pool",)},
        about="each member's games are against the other paddle's members (and, in `halls`, "
        "its hall of fame); the deployed policy is the ES center",
    ),
    "ppo": Study(
        title="Two learners on pong_duel: PPO, a policy per paddle",
        results=RESULTS / "pong_duel_ppo_two_policies",
        # CleanRL's discount, GAE and entropy bonus, as the shared policy's self-play.
        settings=(
            "algo=ppo",
            "env=pong_duel",
            "env.policy_mapping=per_agent",
            "algo.num_envs=16",
            "algo.gamma=0.99",
            "algo.gae_lambda=0.95",
            "algo.entropy_coef=0.01",
            "run.eval_interval=0",
            "run.checkpoint_interval=1000",
            "logger=console",
        ),  # fmt: skip
        budget="run.max_frames",
        total=2_000_000,
        chunk=250_000,
        unit="frame",
        # halls: the pool's defaults, half the games live, half a paddle against the other's
        # 8 newest snapshots (one a segment, PFSP).
        arms={"members": (), "halls": ("selfplay=pool",)},
        about="each paddle's learner plays the other's as it is now (and, in `halls`, its "
        "hall of fame), learning from its own paddle",
    ),
}


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


def run_seed(study: Study, arm: str, seed: int) -> Path:
    """Train seed ``seed`` of ``arm`` chunk by chunk (resumed where it stopped), matching
    each chunk."""
    out = study.results / arm / f"seed{seed}"
    log = out / "matches.json"
    matches = json.loads(log.read_text()) if log.exists() else []
    while not (out / "finished").exists():
        target = (len(matches) + 1) * study.chunk
        resume = (out / "checkpoints" / "latest.pt").exists()
        where = f"run.resume={out}" if resume else f"run.output_dir={out}"
        command = [sys.executable, "-m", "neuroplug", *study.settings, *study.arms[arm],
                   f"run.seed={seed}", f"{study.budget}={target}", where]  # fmt: skip
        subprocess.run(command, check=True)
        matches.append(
            {
                study.unit: target,
                **{
                    f"{paddle}_{name}": _match(out, paddle, opponent)
                    for paddle in PADDLES
                    for opponent, name in ((BOT, "tracking_bot"), ("random", "random"))
                },
            }
        )
        log.write_text(json.dumps(matches, indent=1) + "\n")
        if target >= study.total:
            shutil.copy(out / "checkpoints" / "best_policy.pt", out / "policy.pt")
            shutil.rmtree(out / "checkpoints")
            (out / "finished").write_text("")
    return out


def summary(study: Study) -> None:
    """``curves.png`` and ``summary.md`` from the seeds with matches."""
    done = [
        (arm, seed)
        for arm in study.arms
        for seed in SEEDS
        if (study.results / arm / f"seed{seed}" / "matches.json").exists()
    ]
    drawn, axes = evidence.figure()
    lines = [
        f"# {study.title}",
        "",
        f"Machine: {describe()}. Settings: `python -m neuroplug {' '.join(study.settings)} "
        f"{study.budget}=...`, run {study.chunk:,} {study.unit}s at a time; arm `halls` adds "
        f"`selfplay=pool`. Neither side ever plays the bot: {study.about}; after each chunk "
        f"every paddle's deployed policy plays {GAMES} greedy games on its own seat against "
        "the tracking bot and against random play.",
        "",
        f"| arm | seed | {study.unit}s | paddle | score rate against the bot, by chunk | at "
        "the end, against the bot | against random play |",
        "|---|---|---|---|---|---|---|",
    ]
    colours = dict(zip(study.arms, ("tab:blue", "tab:orange"), strict=True))
    for arm, seed in done:
        run = study.results / arm / f"seed{seed}"
        matches = json.loads((run / "matches.json").read_text())
        budgets = [entry[study.unit] for entry in matches]
        for paddle, style in zip(PADDLES, ("-", "--"), strict=True):
            rates = [entry[f"{paddle}_tracking_bot"]["score_rate"] for entry in matches]
            label = f"{arm} seed {seed} {paddle}"
            axes[0].plot(budgets, rates, style, marker="o", color=colours[arm], label=label)
            against_random = [entry[f"{paddle}_random"]["score_rate"] for entry in matches]
            axes[1].plot(budgets, against_random, style, marker="o", color=colours[arm])
            last = matches[-1]
            lines.append(
                f"| {arm} | {seed} | {budgets[-1]:,} | {paddle} | "
                f"{' / '.join(f'{rate:.2f}' for rate in rates)} | "
                f"{evidence.match_result(last[f'{paddle}_tracking_bot'])} | "
                f"{evidence.match_result(last[f'{paddle}_random'])} |"
            )
    axes[0].set_ylabel("deployed policy's score rate against the bot")
    axes[1].set_ylabel("deployed policy's score rate against random play")
    for axis in axes:
        axis.set_xlabel(study.unit)
    axes[0].legend(fontsize=6)
    evidence.write_summary(study.results, drawn, lines)


def _study() -> Study:
    """The study ``--study`` names (``es`` by default), taken off the command line."""
    name = "es"
    if "--study" in sys.argv:
        at = sys.argv.index("--study")
        name = sys.argv[at + 1]
        del sys.argv[at : at + 2]
    if name not in STUDIES:
        sys.exit(f"--study {name}: choose one of {', '.join(STUDIES)}")
    return STUDIES[name]


if __name__ == "__main__":
    chosen = _study()
    evidence.main(
        __doc__.splitlines()[0],
        chosen.results,
        lambda: [run_seed(chosen, arm, seed) for seed in SEEDS for arm in chosen.arms],
        lambda: summary(chosen),
    )
