"""Longer learning curves on Atari and MuJoCo, sized for the machine at hand.

    python benchmarks/learning_curves.py                   # every experiment below
    python benchmarks/learning_curves.py es_halfcheetah    # just one
    python benchmarks/learning_curves.py --scale 10        # 10x the frame budgets (bigger machines)
    python benchmarks/learning_curves.py ppo_pong_impala --resume   # continue a stopped run
    python benchmarks/learning_curves.py sac_hopper --seeds 1       # add one seed's run

Each experiment runs ``python -m neuroplug`` once per seed with ``logger=console`` into
``benchmarks/results/learning_curves/<experiment>/seed<k>/``, then writes ``curves.png``
(mean and min-max band over seeds, vs frames and vs wall time) and ``summary.md``: the
frame budget, seeds, final evaluation returns, the machine and versions, and the published
result to compare with. Checkpoints are deleted afterwards to keep the results small;
``metrics.csv`` and ``config.yaml`` stay. A stopped run keeps its
``checkpoints/`` (ignored by git) and ``--resume`` continues each seed from its last one
(``run.resume``): a curve longer than a sitting is run in parts.
"""

from __future__ import annotations

import argparse
import csv
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "learning_curves"


@dataclass
class Experiment:
    """One algorithm on one environment with a frame budget and seeds."""

    overrides: list[str]
    max_frames: int
    seeds: list[int]
    published: str
    """What the paper reported, to read our curve against (with its budget)."""
    notes: str = (
        "Wall times were measured while other jobs shared the machine's cores; compare runs "
        "on the frames axis."
    )
    extra: dict[str, str] = field(default_factory=dict)
    unit: str = "generation"
    """What one row of metrics.csv is: a generation (evolution) or a segment (learners)."""
    score: str = "eval_return_mean"
    """The metrics.csv column the summary reports as each seed's final score (a text task's
    ``eval_exact``: the share of completions exactly right)."""
    prepare: list[str] = field(default_factory=list)
    """A script and its arguments run once before the seeds (``{dir}``: the experiment's
    results folder) when ``{dir}/prepared`` does not exist yet: a base model trained by
    backprop that the runs start from."""


COOPERATION_NOTE = (
    "The three cooperation runs shared the machine's two cores with each other and with other "
    "jobs: compare them on the frames axis, not by wall time."
)


def _one_seed(
    algo: str,
    env: str,
    published: str,
    overrides: tuple[str, ...] = (),
    max_frames: int = 100_000,
    seeds: tuple[int, ...] = (0,),
    **fields,
) -> Experiment:
    """``algo`` on ``env`` (plus ``overrides``), evaluated (5 episodes) after every
    generation or segment, one seed unless ``seeds``: the off-policy and cooperation runs."""
    return Experiment(
        overrides=[
            f"algo={algo}",
            f"env={env}",
            *overrides,
            "run.eval_interval=1",
            "run.eval_episodes=5",
        ],
        max_frames=max_frames,
        seeds=list(seeds),
        published=published,
        **fields,
    )


def _cooperation(algo: str, env: str, published: str, **fields) -> Experiment:
    """One of the cooperation comparison's runs (:func:`_one_seed`, sharing the cores)."""
    return _one_seed(algo, env, published, **{"notes": COOPERATION_NOTE, **fields})


EXPERIMENTS: dict[str, Experiment] = {
    "es_halfcheetah": Experiment(
        overrides=[
            "algo=es",
            "env=halfcheetah",
            "algo.population_size=48",
            "run.eval_interval=5",
            "run.eval_episodes=3",
        ],
        max_frames=2_000_000,
        seeds=[0, 1],
        published=(
            "the MuJoCo results of Salimans et al. 2017 (arXiv:1703.03864), which compare ES with "
            "TRPO at matched numbers of timesteps, using populations of thousands on up to 1440 "
            "CPU workers; read the HalfCheetah entry there against our curve at 2M frames."
        ),
    ),
    # Low-rank (EGGROLL) against full-rank ES at equal frames, same settings otherwise.
    "es_halfcheetah_lowrank": Experiment(
        overrides=[
            "algo=es",
            "env=halfcheetah",
            "algo.population_size=48",
            "algo.perturbation=lowrank",
            "algo.rank=4",
            "algo.lowrank_min_size=1024",
            "run.eval_interval=5",
            "run.eval_episodes=3",
        ],
        max_frames=2_000_000,
        seeds=[0, 1],
        published="es_halfcheetah here: the same run with full-rank noise.",
    ),
    # DeepMind Control through EnvPool's dict observations, flattened (neuroplug/envs/flatten.py).
    "es_cheetah_run": Experiment(
        overrides=[
            "algo=es",
            "env=cheetah_run",
            "algo.population_size=48",
            "run.eval_interval=5",
            "run.eval_episodes=3",
        ],
        max_frames=1_000_000,
        seeds=[0, 1],
        published=(
            "no ES result on DeepMind Control at this budget that we know of. For scale: the "
            "untrained networks of generation 1 score ~2-25 here, and gradient-based learners "
            "from states reach several hundred by 0.5-1M steps (the 'State SAC' rows of the "
            "CURL paper, arXiv:2004.04136)."
        ),
        notes="Nothing else ran on the machine during these runs.",
    ),
    "es_breakout": Experiment(
        overrides=[
            "algo=es",
            "env=breakout",
            "env.max_episode_steps=1000",
            "run.eval_interval=5",
            "run.eval_episodes=5",
        ],
        max_frames=1_500_000,
        seeds=[0],
        published=(
            "Salimans et al. 2017 report ES on Breakout at 1B frames (population 5000); this is "
            "~1/700 of that, the full-rank side of the low-rank comparison."
        ),
    ),
    "es_breakout_lowrank": Experiment(
        overrides=[
            "algo=es",
            "env=breakout",
            "env.max_episode_steps=1000",
            "algo.perturbation=lowrank",
            "algo.rank=4",
            "algo.lowrank_min_size=4096",
            "run.eval_interval=5",
            "run.eval_episodes=5",
        ],
        max_frames=1_500_000,
        seeds=[0],
        published="es_breakout here: the same run with full-rank noise.",
    ),
    "ga_frostbite": Experiment(
        overrides=[
            "algo=ga",
            "env=frostbite",
            "env.max_episode_steps=1000",
            "algo.population_size=32",
            "algo.truncation=4",
            "algo.elite_candidates=2",
            "algo.elite_episodes=3",
            "run.eval_interval=2",
            "run.eval_episodes=3",
        ],
        max_frames=1_200_000,
        seeds=[0],
        published=(
            "the Atari table and learning curves of Such et al. 2017 (arXiv:1712.06567) for the "
            "deep GA on Frostbite (population 1000, T=20, sigma 0.002, 20k-frame episodes, up to "
            "1B frames), one of the games where the GA did best. Here: ~1/1000 of the frames, a "
            "population of 32 and 4k-frame episodes, what one 2-core CPU does in under an hour."
        ),
    ),
    "ppo_pong": Experiment(
        # The plain command: the pixels preset is CleanRL's ppo_atari_envpool.py settings
        # (8 envs x 128 steps, 4 epochs x 4 minibatches, lr 2.5e-4 annealed over this budget,
        # clipped rewards, episodic life); games are reported whole and unclipped.
        overrides=["algo=ppo", "env=pong", "run.eval_interval=5", "run.eval_episodes=3"],
        max_frames=3_000_000,
        seeds=[0],
        published=(
            "CleanRL's ppo_atari_envpool.py on Pong-v5: an episodic return of 20.45 after 10M "
            "agent steps (40M frames), in the CleanRL benchmark (Huang et al. 2022, JMLR "
            "23(274)). The same settings here, for 3M frames (750k agent steps, under 1/13 of "
            "CleanRL's budget, with the learning rate annealed over it): what a 2-core CPU "
            "trains in about an hour, where the Nature CNN's backward pass is the bottleneck."
        ),
        unit="segment",
    ),
    "ppo_pong_impala": Experiment(
        # ppo_pong's command with the IMPALA ResNet (net.type=impala: three residual stacks,
        # 256 features, the value head on them): the same 3M-frame budget, so the learning
        # rate anneals as in ppo_pong and the curves compare at equal frames.
        overrides=[
            "algo=ppo",
            "env=pong",
            "net.type=impala",
            "run.eval_interval=5",
            "run.eval_episodes=3",
        ],
        max_frames=3_000_000,
        seeds=[0],
        published=(
            "ppo_pong (the Nature CNN, the same settings and budget) at equal frames; "
            "Espeholt et al. (2018) report the deep ResNet ahead of the Nature CNN on Atari "
            "after far longer training (IMPALA, 200M frames)."
        ),
        unit="segment",
        notes=(
            "At equal frames (networks_pong.png, training games' mean): at 720k frames the "
            "Nature CNN's last segment averaged -20.18 and the ResNet's -19.13 (best game -17), "
            "the ResNet's segments before it -20.3 to -20.8; both evaluations at 654k scored "
            "-21. One seed and under a quarter of the budget: not yet evidence either way. "
            "Wall times do not compare (other jobs shared both runs' cores); "
            "benchmarks/results/networks.md measures the ResNet at 2.7-3.1x the Nature CNN's "
            "cost per frame, nothing else running."
        ),
    ),
    "ppo_pong_impala_bf16": Experiment(
        # ppo_pong_impala with the encoder trained in bfloat16 under autocast: 0.61x the
        # float32 update's time on an AMX Xeon (8k frames, other jobs running), so the
        # ResNet's 3M frames fit in about two hours of two cores.
        overrides=[
            "algo=ppo",
            "env=pong",
            "net.type=impala",
            "algo.encoder_precision=bfloat16",
            "run.eval_interval=5",
            "run.eval_episodes=3",
        ],
        max_frames=3_000_000,
        seeds=[0],
        published=(
            "ppo_pong (the Nature CNN in float32) and ppo_pong_impala (the ResNet in float32) "
            "at equal frames: networks_pong.png."
        ),
        unit="segment",
        notes=(
            "At equal frames (networks_pong.png, training games' mean): the ResNet went from "
            "-20.8 to -19.4 at 720k, -11.4 at 982k (evaluation 0.0) and +3.0 at 1.24M, where "
            "the Nature CNN (ppo_pong, float32, an AMD EPYC) was at -20.2, -20.2 (evaluation "
            "-21) and -20.5; the Nature CNN ended its 3M frames at -18.7. One seed, stopped "
            "at the session's end (2026-11-28, Xeon family 6 model 207, 220-340 "
            "frames/s; other jobs shared its cores for much of the run)."
        ),
    ),
    "appo_pong": Experiment(
        # The plain command: the pixels preset is Sample Factory's Atari settings (V-trace
        # off, GAE, a queue of two rollouts), with envs stepping beside the learner.
        overrides=["algo=appo", "env=pong", "run.eval_interval=5", "run.eval_episodes=3"],
        max_frames=3_000_000,
        seeds=[0],
        published=(
            "CleanRL's ppo_atari_envpool.py on Pong-v5 (20.45 after 40M frames, Huang et al. "
            "2022), whose settings Sample Factory's EnvPool Atari example and this preset "
            "share; ppo_pong here is the same budget with the synchronous learner."
        ),
        unit="segment",
    ),
    "dqn_pong": Experiment(
        # The plain command: the pixels preset is Nature DQN as CleanRL's dqn_atari.py runs it
        # (one env, replay 1M, learning starts 80k steps, a gradient step every 4, target
        # every 1k, epsilon 1 -> 0.01 over 10% of the budget).
        overrides=["algo=dqn", "env=pong", "run.eval_interval=5", "run.eval_episodes=3"],
        max_frames=2_000_000,
        seeds=[0],
        published=(
            "CleanRL's dqn_atari.py on PongNoFrameskip-v4 after 10M agent steps (40M frames): "
            "its released seed-1 model scores 17.8 +- 1.8 in evaluation "
            "(huggingface.co/cleanrl/PongNoFrameskip-v4-dqn_atari-seed1). "
            "Here: 2M frames (500k agent steps, 1/20 of that budget), with epsilon annealed "
            "over 10% of it as CleanRL does over its own budget."
        ),
        unit="segment",
    ),
    # Evolution and RL cooperating (issue 50) against TD3 alone, at equal frames on one
    # task, each at its own paper's settings; compared in cooperation_halfcheetah.png.
    "td3_halfcheetah": _cooperation(
        "td3",
        "halfcheetah",
        "Fujimoto et al. (2018) and CleanRL's td3_continuous_action.py report HalfCheetah "
        "after 1M steps; this is the first tenth, beside cem_rl and erl at equal frames.",
        unit="segment",
    ),
    "sac_halfcheetah": _one_seed(
        "sac",
        "halfcheetah",
        "Haarnoja et al. (2018) and CleanRL's sac_continuous_action.py report HalfCheetah "
        "after 1M steps; CleanRL's script run here for the first 100k: "
        "cleanrl_sac_halfcheetah/summary.md.",
        unit="segment",
    ),
    "cem_rl_halfcheetah": _cooperation(
        "cem_rl",
        "halfcheetah",
        "Pourchot & Sigaud (2019) report CEM-TD3 on HalfCheetah-v2 after 1M steps; this is "
        "the first fifth, beside td3 and erl at equal frames.",
        max_frames=200_000,
    ),
    "erl_halfcheetah": _cooperation(
        "erl",
        "halfcheetah",
        "Khadka & Tumer (2018) report ERL (DDPG) on HalfCheetah-v2 over 2M+ steps; here "
        "with TD3, the first 100k steps, beside td3 and cem_rl at equal frames.",
        notes=(
            COOPERATION_NOTE
            + " Rerun on 2026-11-28 (Xeon, family 6 model 207, beside td3_hopper and other "
            "jobs) with ERL deploying its learner when its exploring episode beats every "
            "member: the deployed policy evaluated -264 (11k), 55 (33k, the learner's first "
            "deployment), 1,524 (66k), 2,259 (77k), 2,636 (99k) and 3,031 (110k frames), the "
            "learner from 66k on, while the GA population's best episode stayed at or below "
            "152. TD3 alone (Zen 5) evaluated 3,323 at 69k and 4,933 at 100k. The run before "
            "learner deployment reached 3,429 in the learner's own episodes at 110k while its "
            "deployed champion stayed near -160."
        ),
    ),
    # The same three on Hopper, where an episode ends when the hopper falls: the task on
    # which the CEM-RL and ERL papers report cooperation paying most against TD3 alone.
    "td3_hopper": _cooperation(
        "td3",
        "hopper",
        "Fujimoto et al. (2018) and CleanRL's td3_continuous_action.py report Hopper after 1M "
        "steps; this is the first tenth, beside cem_rl and erl at equal frames.",
        unit="segment",
    ),
    # td3_hopper ran with the tanh actor td3 had then; this one with CleanRL's ReLU actor
    # (td3's default since), named explicitly so the run means the same whatever the default.
    "td3_hopper_relu": _one_seed(
        "td3",
        "hopper",
        "CleanRL's td3_continuous_action.py (ReLU actor) on Hopper after 1M steps; the same "
        "script run here for 100k steps: cleanrl_td3_hopper/summary.md.",
        overrides=("net.activation=relu",),
        unit="segment",
    ),
    "sac_hopper": _one_seed(
        "sac",
        "hopper",
        "Haarnoja et al. (2018) and CleanRL's sac_continuous_action.py report Hopper after 1M "
        "steps; this is the first tenth. CleanRL's own run on the same machine: "
        "cleanrl_sac_hopper/.",
        seeds=(0, 1, 2),
        unit="segment",
    ),
    # The tuned temperature's start before CleanRL's 1.0 (b133dec), beside sac_hopper.
    "sac_hopper_alpha_init_0.2": _one_seed(
        "sac",
        "hopper",
        "sac_hopper: the same runs with the tuned temperature starting at 1.0 (the default "
        "since 2026-11-28, CleanRL's and SB3's).",
        overrides=("algo.alpha_init=0.2",),
        seeds=(0, 1),
        unit="segment",
    ),
    # One learning phase per env step, as CleanRL's loop (the preset's phases are 4 steps).
    "sac_hopper_rollout_1": _one_seed(
        "sac",
        "hopper",
        "sac_hopper: the same run with algo.rollout_length=1 (a gradient step after every env "
        "step, CleanRL's loop; the default phases are 4 steps and 4 gradient steps).",
        overrides=("algo.rollout_length=1",),
        seeds=(0, 1, 2),
        unit="segment",
    ),
    "cem_rl_hopper": _cooperation(
        "cem_rl",
        "hopper",
        "Pourchot & Sigaud (2019) report CEM-TD3 on Hopper-v2 after 1M steps; this is the "
        "first tenth, beside td3 and erl at equal frames.",
    ),
    "erl_hopper": _cooperation(
        "erl",
        "hopper",
        "Khadka & Tumer (2018) report ERL (DDPG) on Hopper-v2 over 1M+ steps; here with TD3, "
        "the first 100k steps, beside td3 and cem_rl at equal frames.",
    ),
    # Issue 70's evidence: a transformer of 1.2M parameters (d 160, 4 layers) trained from
    # scratch by low-rank ES to write 3-digit sums (frames are tokens; eval_exact is the
    # share of evaluation completions exactly right, the figure the issue asks >= 0.9 of).
    "ppo_simple_tag_per_team": Experiment(
        # A policy per team (env.policy_mapping=per_team): the three adversaries share one,
        # the agent has its own; 4 worlds, the discrete preset (RL Zoo's CartPole PPO).
        overrides=[
            "algo=ppo",
            "env=simple_tag",
            "env.policy_mapping=per_team",
            "algo.num_envs=16",
            "run.eval_interval=5",
            "run.eval_episodes=10",
        ],
        max_frames=1_000_000,
        seeds=[0, 1, 2],
        published=(
            "mpe2's simple_tag (Lowe et al. 2017's predator-prey): each adversary earns +10 "
            "for every tag of the agent, the agent -10 (and a penalty for leaving the "
            "field). No published PPO curve at this budget; the run shows the two teams' "
            "policies learning against each other (eval/adversary/return_mean, "
            "eval/agent/return_mean)."
        ),
        unit="segment",
    ),
    "es_addition_transformer": Experiment(
        overrides=[
            "algo=es",
            "env=addition",
            "env.kwargs.reverse=true",
            "net.type=causal_lm",
            "net.kwargs.d_model=160",
            "net.kwargs.layers=4",
            "algo.perturbation=lowrank",
            "algo.rank=4",
            "algo.lowrank_min_size=1024",
            "algo.population_size=256",
            "algo.episodes_per_member=16",
            "run.eval_interval=10",
            "run.eval_episodes=200",
        ],
        max_frames=50_000_000,
        seeds=[0],
        published=(
            "EGGROLL (Sarkar et al. 2025) pretrains integer-token language models from "
            "scratch by low-rank ES with populations up to 262,144 on GPUs; here a 1.2M "
            "transformer on two CPU cores, the sum written least significant digit first."
        ),
    ),
    # Issue 70's fine-tuning evidence, after Qiu et al. 2025 (ES beyond PPO and GRPO on
    # Countdown, from models first trained by gradient descent): a 0.86M Llama trained by
    # backprop on Countdown's answers (benchmarks/pretrain_text_lm.py, saved with
    # save_pretrained), loaded back and fine-tuned by low-rank ES on the task's verifier.
    "es_countdown_finetune": Experiment(
        prepare=[
            "benchmarks/pretrain_text_lm.py",
            "--task=countdown",
            "--out={dir}/base_model",
            "--steps=800",
        ],
        overrides=[
            "algo=es",
            "env=countdown",
            "net.type=pretrained_lm",
            "net.kwargs.pretrained={dir}/base_model",
            "algo.perturbation=lowrank",
            "algo.rank=1",
            "algo.lowrank_min_size=1024",
            "algo.population_size=32",
            "algo.episodes_per_member=32",
            "algo.sigma=0.002",
            "algo.learning_rate=0.0005",
            "algo.l2_coeff=0",
            "run.eval_interval=5",
            "run.eval_episodes=500",
            "run.eval_at_start=true",
        ],
        max_frames=6_000_000,
        seeds=[0, 1, 2],
        score="eval_exact",
        published=(
            "Qiu et al. 2025: ES (population 30, sigma 0.001) fine-tuning Qwen2.5 0.5B-7B and "
            "Llama 3 raised Countdown accuracy beyond PPO and GRPO; here the same on a 0.86M "
            "model on two CPU cores: the base model's accuracy is the first evaluation."
        ),
    ),
    # Issue 70: a transformer policy (the observation's entries as tokens) on a control
    # task by low-rank ES, its attention and LayerNorm batched over members.
    "es_cartpole_transformer": Experiment(
        overrides=[
            "algo=es",
            "env=cartpole",
            "net.type=transformer",
            "algo.perturbation=lowrank",
            "algo.rank=4",
            "algo.lowrank_min_size=1024",
            "run.eval_interval=5",
            "run.eval_episodes=20",
        ],
        max_frames=3_000_000,
        seeds=[0, 1, 2],
        published="CartPole-v1 is solved at an average return of 475 (gymnasium's threshold).",
    ),
}

COMPARISONS: dict[str, tuple[list[str], str]] = {
    "cooperation_halfcheetah": (
        ["td3_halfcheetah", "cem_rl_halfcheetah", "erl_halfcheetah"],
        "eval_return_mean",
    ),
    "cooperation_hopper": (["td3_hopper", "cem_rl_hopper", "erl_hopper"], "eval_return_mean"),
    # Training games' mean: the Pong runs evaluate every 5th segment only.
    "networks_pong": (["ppo_pong", "ppo_pong_impala", "ppo_pong_impala_bf16"], "return_mean"),
}
"""Experiments plotted together (``<name>.png``) and the metric drawn, by name."""


def _compare(name: str) -> None:
    """One plot of the experiments in :data:`COMPARISONS` ``name`` that have run."""
    from neuroplug.tools.plot import load_curves, plot_curves

    experiments, metric = COMPARISONS[name]
    dirs = [
        RESULTS / experiment / f"seed{seed}"
        for experiment in experiments
        for seed in EXPERIMENTS[experiment].seeds
        if (RESULTS / experiment / f"seed{seed}" / "metrics.csv").exists()
    ]
    if dirs:
        plot_curves(load_curves(dirs), RESULTS / f"{name}.png", metric)


def _run(name: str, experiment: Experiment, scale: float, resume: bool, seeds: list[int]) -> None:
    """Run ``seeds`` of ``experiment`` into their run dirs (``--resume``: from their last
    checkpoints)."""
    frames = int(experiment.max_frames * scale)
    folder = RESULTS / name
    if experiment.prepare and not (folder / "prepared").exists():
        command = [sys.executable, *(part.format(dir=folder) for part in experiment.prepare)]
        print(" ".join(command), flush=True)
        subprocess.run(command, check=True)
        (folder / "prepared").write_text(" ".join(experiment.prepare) + "\n")
    for seed in seeds:
        run_dir = RESULTS / name / f"seed{seed}"
        resuming = resume and (run_dir / "checkpoints").exists()
        if run_dir.exists() and not resuming:
            shutil.rmtree(run_dir)
        command = [
            sys.executable,
            "-m",
            "neuroplug",
            *(override.format(dir=folder) for override in experiment.overrides),
            "logger=console",
            f"run.seed={seed}",
            f"run.max_frames={frames}",
            "run.max_generations=null",
            "run.stop_when_solved=false",
            f"run.resume={run_dir}" if resuming else f"run.output_dir={run_dir}",
        ]
        print(" ".join(command), flush=True)
        _record_machine(run_dir, resuming)
        started = time.time()
        subprocess.run(command, check=True)
        print(f"{name} seed {seed}: {time.time() - started:.0f} s", flush=True)
        if _last(run_dir, "frames") < frames:
            # Interrupted (Ctrl-C writes a checkpoint and exits cleanly): keep what --resume
            # continues from, and stop here.
            raise SystemExit(f"{name} seed {seed} stopped early; continue it with --resume")
        # Finished: the checkpoint is no longer needed to continue, and results stay small.
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
        (run_dir / "neuroplug.log").unlink(missing_ok=True)


def _last(run_dir: Path, key: str) -> float:
    with (run_dir / "metrics.csv").open(newline="") as stream:
        values = [
            float(row[key])
            for row in csv.DictReader(stream)
            if row.get(key) not in (None, "", "nan")
        ]
    return values[-1] if values else float("nan")


def _figure(value: float) -> str:
    """A return as the summaries write it (one decimal), a share (below 1) to three."""
    return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"


def _machine() -> str:
    import envpool
    from machine import describe

    return (
        f"{describe()}; no GPU used; Python {platform.python_version()}, "
        f"envpool {envpool.__version__}"
    )


def _record_machine(run_dir: Path, resuming: bool) -> None:
    """Append this machine to the run dir's ``machine.txt``: a run continued with --resume
    on another machine names both, and the summary names the machines that produced it,
    not the one that draws it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / "machine.txt").open("a" if resuming else "w") as stream:
        stream.write(f"{time.strftime('%Y-%m-%d')}: {_machine()}\n")


def _machines(run_dirs: list[Path]) -> str:
    """The machines recorded in the run dirs (oldest first), else this one."""
    recorded: list[str] = []
    for run_dir in run_dirs:
        path = run_dir / "machine.txt"
        if path.is_file():
            recorded += [line for line in path.read_text().splitlines() if line.strip()]
    return "; then ".join(dict.fromkeys(recorded)) or f"{_machine()} (not recorded at run time)"


def _summarise(name: str, experiment: Experiment, run_dirs: list[Path], scale: float) -> None:
    from neuroplug.tools.plot import load_curves, plot_curves

    plot_curves(load_curves(run_dirs), RESULTS / name / "curves.png", "return_mean")
    plot_curves(load_curves(run_dirs), RESULTS / name / "eval_curves.png", "eval_return_mean")
    lines = [
        f"# {name}",
        "",
        f"- command: `python -m neuroplug {' '.join(experiment.overrides)} run.max_frames={int(experiment.max_frames * scale)}`",
        f"- seeds: {[int(path.name.removeprefix('seed')) for path in run_dirs]}",
        f"- machine: {_machines(run_dirs)}",
        f"- summarised on: {time.strftime('%Y-%m-%d')}",
        "",
        f"| seed | frames | {experiment.unit}s | wall time (s) | final {experiment.score} | last {experiment.unit}'s mean return |",
        "|---|---|---|---|---|---|",
    ]
    budget = int(experiment.max_frames * scale)
    partial: list[str] = []
    for run_dir in run_dirs:
        seed = int(run_dir.name.removeprefix("seed"))
        frames = _last(run_dir, "frames")
        if frames < budget:
            partial.append(f"seed {seed} stopped at {frames:,.0f} of {budget:,} frames")
        lines.append(
            f"| {seed} | {_last(run_dir, 'frames'):,.0f} | {_last(run_dir, experiment.unit):.0f} "
            f"| {_last(run_dir, 'elapsed'):.0f} | {_figure(_last(run_dir, experiment.score))} "
            f"| {_last(run_dir, 'return_mean'):.1f} |"
        )
    lines += [
        "",
        *(
            [
                f"**Partial:** {'; '.join(partial)} (continue with `--resume` where checkpoints remain).",
                "",
            ]
            if partial
            else []
        ),
        "Curves: `curves.png` (population mean return), `eval_curves.png` (deployed policy).",
        "",
        f"Compare with: {experiment.published}",
    ]
    if experiment.notes:
        lines += ["", experiment.notes]
    (RESULTS / name / "summary.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Run the chosen experiments and summarise each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", choices=[[], *EXPERIMENTS], help="experiments (default: all)"
    )
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every frame budget")
    parser.add_argument(
        "--summarise-only", action="store_true", help="rebuild plots and summaries of existing runs"
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue each seed from its run dir's last checkpoint (started ones only)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="run only these of the experiment's seeds (the summary reads every seed run)",
    )
    arguments = parser.parse_args()
    unknown = [name for name in arguments.names if name not in EXPERIMENTS]
    if unknown:
        parser.error(f"unknown experiment(s) {unknown}; choose from {', '.join(EXPERIMENTS)}")
    for name in arguments.names or list(EXPERIMENTS):
        experiment = EXPERIMENTS[name]
        seeds = arguments.seeds or experiment.seeds
        outside = sorted(set(seeds) - set(experiment.seeds))
        if outside:
            parser.error(f"{name} has seeds {experiment.seeds}, not {outside}")
        if not arguments.summarise_only:
            _run(name, experiment, arguments.scale, arguments.resume, seeds)
        run_dirs = [RESULTS / name / f"seed{seed}" for seed in experiment.seeds]
        _summarise(name, experiment, [path for path in run_dirs if path.exists()], arguments.scale)
    for comparison, (members, _) in COMPARISONS.items():
        if any(name in members for name in arguments.names or list(EXPERIMENTS)):
            _compare(comparison)


if __name__ == "__main__":
    main()
