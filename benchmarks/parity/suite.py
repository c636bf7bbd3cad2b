"""What the parity suite compares: each method beside its reference implementation on
two tasks or more, at equal env steps and the reference's settings where ours follow them.

A :class:`Comparison` is one method on one task: our side and the references' sides, the
env-step budget, the seeds and the width of the bins its curves are averaged over. The
budgets are chosen for two CPU cores across a few days (one run per core at a time): at
least 5 seeds where a run costs 5 minutes or less, 3 otherwise (issue 68).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Side:
    """One implementation of a method: ``neuroplug`` (its overrides), or a peer run by
    :mod:`sides` (``cleanrl``: a single-file script and its arguments)."""

    name: str
    """Which implementation: ``neuroplug``, ``cleanrl``, ``sb3``, ..."""
    arguments: tuple[str, ...] = ()
    """neuroplug: its overrides; cleanrl: the script's arguments beyond task, steps, seed."""
    script: str = ""
    """cleanrl: the script's file name in the checkout's ``cleanrl/`` folder."""
    runner: str = ""
    """How the side runs (a key of ``sides.RUNNERS``); empty: its name. A method that
    extends another (``cem_rl`` beside ``td3``) has a reference named after that method,
    run by ``neuroplug``."""
    records_from: str = ""
    """``<method>/<task>/<side>``: this side's runs are another comparison's (``td3``'s
    own runs beside CleanRL are the hybrids' reference), not run twice."""
    metric: str = "return_mean"
    """neuroplug: the ``metrics.csv`` column a point holds: ``return_mean``, or
    ``best_member`` (a population of learners: its best member's objective)."""

    @property
    def runs_with(self) -> str:
        """The key of ``sides.RUNNERS`` that runs this side."""
        return self.runner or self.name


@dataclass(frozen=True)
class Comparison:
    """One method on one task: ours beside its references at an equal budget."""

    method: str
    task: str
    """The gymnasium id both sides train on (ours through its own env family)."""
    budget: int
    """In ``unit``s: env steps (learners) or evaluations, one episode each (strategies)."""
    seeds: tuple[int, ...]
    bin: int
    """Curves are the mean training episode return per this many ``unit``s; the final
    score is the last bin's."""
    ours: Side
    references: tuple[Side, ...]
    unit: str = "env_steps"
    """``env_steps`` (learners) or ``evaluations`` (strategies: population members'
    episodes, one per member and generation)."""
    population: int = 0
    """Strategies: members per generation on every side (the budget is whole
    generations of it)."""
    also: tuple[str, ...] = ()
    """Measures recorded beside the score at every point (QD's ``coverage``: ours its
    ``algo/<name>`` column), summarised at the end but not compared."""
    notes: str = ""
    sides: tuple[Side, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sides", (self.ours, *self.references))

    @property
    def key(self) -> str:
        """``<method>/<task>``: where its results live under ``results/parity/``."""
        return f"{self.method}/{self.task}"

    @property
    def score(self) -> str:
        """What a point's value is, in words (the plots' axis)."""
        if self.ours.metric in SCORES:
            return SCORES[self.ours.metric]
        return "population mean return" if self.unit == "evaluations" else "training episode return"

    @property
    def generations(self) -> int:
        """Strategies: the generations the budget buys."""
        return self.budget // self.population


SCORES = {
    "best_member": "best member's objective",
    "algo/qd_score": "QD-score",
    "episode_length_mean": "training episode length (agent steps)",
}
"""The words for a score other than an episode return, by our side's metric."""

ENVS = {
    "Hopper-v4": "hopper",
    "HalfCheetah-v4": "halfcheetah",
    "CartPole-v1": "cartpole",
    "Acrobot-v1": "acrobot",
    "Pendulum-v1": "pendulum",
}
"""gymnasium ids -> neuroplug's env configs (EnvPool's versions of the same tasks)."""
QUICK_SEEDS = (1, 2, 3, 4, 5)
"""Runs of 5 minutes or less on one core: five seeds (issue 68)."""

OFF_POLICY_SEEDS = (1, 2, 3)
"""100k steps of SAC or TD3 cost 20-40 minutes on one core: three seeds (issue 68)."""


def sb3(algo: str, **settings) -> Side:
    """Stable-Baselines3's ``algo`` with ``settings`` (RL Zoo's hyperparameters)."""
    return Side("sb3", ("--settings", json.dumps(settings)), script=algo)


SB3_CLEANRL = {
    "sac": sb3(
        "sac", learning_rate=3e-4, buffer_size=1_000_000, learning_starts=5_000,
        batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1,
        ent_coef="auto", target_update_interval=1, net_arch=[256, 256],
    ),
    "td3": sb3(
        "td3", learning_rate=3e-4, buffer_size=1_000_000, learning_starts=25_000,
        batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1,
        policy_delay=2, target_policy_noise=0.2, target_noise_clip=0.5, action_noise=0.1,
        net_arch=[256, 256],
    ),
}  # fmt: skip
"""Stable-Baselines3's SAC and TD3 at CleanRL's settings (as far as SB3 has them)."""


def _off_policy(method: str, task: str) -> Comparison:
    """``td3``/``sac`` beside CleanRL's ``<method>_continuous_action.py`` (our defaults
    are its settings), 100k env steps, bins of 10k (our segments)."""
    ours_arguments = (f"algo={method}", f"env={ENVS[task]}")
    return Comparison(
        method=method,
        task=task,
        budget=100_000,
        seeds=OFF_POLICY_SEEDS,
        bin=10_000,
        ours=Side("neuroplug", ours_arguments),
        references=(
            Side("cleanrl", script=f"{method}_continuous_action.py"),
            SB3_CLEANRL[method],
            *(
                # An ablation: the policy network at OpenAI ES's normc, sac's default before
                # 2026-12-05 (CleanRL's nn.Linear init since).
                (Side("neuroplug_normc", (*ours_arguments, "net.init=normc"), runner="neuroplug"),)
                if method == "sac"
                else ()
            ),
        ),
        notes=(
            "CleanRL's settings on every side (ours: EnvPool's MuJoCo task, the peers "
            "gymnasium 0.29.1's; SB3's SAC has one learning rate, 3e-4, for the actor, the "
            "critics and the temperature); training episode returns, as CleanRL logs them."
        ),
    )


RL_ZOO_PPO_CARTPOLE = sb3(
    "ppo", n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
    ent_coef=0.0, learning_rate="lin_0.001", clip_range="lin_0.2",
)  # fmt: skip
"""rl-baselines3-zoo's ``hyperparams/ppo.yml``, CartPole-v1 (our preset for discrete
vector tasks follows it)."""
RL_ZOO_DQN_CARTPOLE = sb3(
    "dqn", learning_rate=2.3e-3, batch_size=64, buffer_size=100_000, learning_starts=1000,
    gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
    exploration_fraction=0.16, exploration_final_eps=0.04, net_arch=[256, 256],
)  # fmt: skip
"""rl-baselines3-zoo's ``hyperparams/dqn.yml``, CartPole-v1."""
RL_ZOO_DQN_ACROBOT = sb3(
    "dqn", learning_rate=6.3e-4, batch_size=128, buffer_size=50_000, learning_starts=0,
    gamma=0.99, target_update_interval=250, train_freq=4, gradient_steps=-1,
    exploration_fraction=0.12, exploration_final_eps=0.1, net_arch=[256, 256],
)  # fmt: skip
"""rl-baselines3-zoo's ``hyperparams/dqn.yml``, Acrobot-v1."""


def _shared_policy(task: str, module: str, config: str, kwargs: dict) -> Comparison:
    """``ppo`` with one policy for every agent of a multi-agent world beside
    Stable-Baselines3's PPO on the same world through SuperSuit (PettingZoo's own recipe),
    both at rl-baselines3-zoo's CartPole settings (our preset for discrete vector tasks),
    in rollouts of 32 steps of 3 worlds; frames are every agent's steps."""
    worlds = 3
    agents = kwargs.get("N", 3)
    # One minibatch of the whole rollout per epoch, as ours takes (our preset's minibatches
    # 1; SB3's batch_size 256 of a 288-step rollout made a second minibatch of 32: its first
    # runs fell to -43 where a random policy scores -27).
    rollout = worlds * agents * 32
    settings = {
        **json.loads(RL_ZOO_PPO_CARTPOLE.arguments[1]),
        "n_envs": worlds,
        "batch_size": rollout,
    }
    reference = Side(
        "sb3_pettingzoo",
        ("--env", module, "--kwargs", json.dumps(kwargs), "--settings", json.dumps(settings)),
    )
    return Comparison(
        method="ppo",
        task=task,
        budget=300_000,
        seeds=QUICK_SEEDS,
        bin=30_000,
        ours=Side("neuroplug", ("algo=ppo", f"env={config}", f"algo.num_envs={worlds * agents}")),
        references=(reference,),
        notes=f"One policy for every agent (shared), {worlds} worlds of {agents} agents, "
        "rl-baselines3-zoo's CartPole PPO settings on both sides (64-64 tanh networks), one "
        f"minibatch of the {rollout}-step rollout per epoch; each agent's training episode "
        "return; frames are every agent's steps.",
    )


STRATEGY_TASKS = {"CartPole-v1": (4, 2, 40), "Pendulum-v1": (3, 1, 200)}
"""Strategies' tasks: observation size, policy outputs, generations."""
STRATEGY_NET = ("net.type=mlp", "net.hidden_sizes=[16]", "net.activation=tanh")
"""``peers/policy_shape.py``'s policy (16 tanh units, no observation normalisation)."""


MA_PONG_STEPS = 300_000
"""Multi-agent Pong's budget: agent steps (both paddles'), CleanRL's ``global_step``."""


def _ma_pong() -> Comparison:
    """``ppo`` with one policy for both paddles of PettingZoo's Pong beside CleanRL's
    ``ppo_pettingzoo_ma_atari.py`` (run unmodified on today's PettingZoo and SuperSuit:
    ``peers/cleanrl_ma_atari.py``) at its settings and equal agent steps. Self-play Pong is
    zero-sum, so a paddle's return says little of learning; the score is the training
    episodes' length (rallies grow as both paddles improve)."""
    return Comparison(
        method="ppo",
        task="pong_v3",
        budget=MA_PONG_STEPS,
        seeds=OFF_POLICY_SEEDS,
        bin=MA_PONG_STEPS // 10,
        ours=Side(
            "neuroplug",
            ("algo=ppo", "env=pong_ma", "algo.num_envs=16"),
            metric="episode_length_mean",
        ),
        references=(
            Side("cleanrl_ma_atari", script="ppo_pettingzoo_ma_atari.py"),
            # Ours with bfloat16 convolutions, the faster setting (results/parity/ppo/pong_v3/
            # speed_2026-12-06.md): does it learn as float32 does?
            Side(
                "neuroplug_bf16",
                ("algo=ppo", "env=pong_ma", "algo.num_envs=16", "algo.encoder_precision=bfloat16"),
                metric="episode_length_mean",
                runner="neuroplug",
            ),
        ),
        notes="One policy for both paddles, 8 worlds (16 agents' lanes), CleanRL's settings on "
        "both sides (ours: its ppo_atari_envpool.py preset, the same numbers: rollouts of "
        "128, 4 epochs of 4 minibatches, learning rate 2.5e-4 annealed, clip 0.1, entropy "
        "0.01); the same frames (SuperSuit's max of 2, skip 4, grey 84 x 84, 4 stacked, the "
        "agent's one-hot planes); score: each training episode's length in agent steps.",
    )


def _strategy(method: str, task: str, references: tuple[Side, ...], population: int = 0):
    """A strategy beside EvoTorch's (and pycma's) on ``task``, one episode per member, at
    equal evaluations; the population is the CMA-ES default ``4 + floor(3 ln D)`` unless
    given."""
    observations, outputs, generations = STRATEGY_TASKS[task]
    dimension = observations * 16 + 16 + 16 * outputs + outputs
    population = population or 4 + int(3 * math.log(dimension))
    settings = ("algo.obs_norm=false",) + (("algo.action_noise=0",) if method == "es" else ())
    return Comparison(
        method=method,
        task=task,
        budget=generations * population,
        seeds=QUICK_SEEDS,
        bin=generations * population // 10,
        unit="evaluations",
        population=population,
        ours=Side("neuroplug", (f"algo={method}", f"env={ENVS[task]}", *STRATEGY_NET, *settings)),
        references=references,
        notes=f"{population} members, {generations} generations, one episode each; the "
        "same 16-unit tanh policy on every side, no observation normalisation, every side "
        "starting from the same initialisation (OpenAI ES's normc, drawn from the seed) at "
        "the same step size.",
    )


GA_TASKS = {"CartPole-v1": 200_000, "Pendulum-v1": 600_000}
"""The GA's tasks and env-step budgets."""


def _ga(task: str) -> Comparison:
    """Such et al.'s GA beside EvoTorch's elitist GA (Gaussian mutation) at equal env steps:
    their elite rounds differ (ours re-evaluates the best 10 five times, EvoTorch's
    re-evaluates its parents), so evaluations are not the common budget, env steps are."""
    settings = ("algo.truncation=8", "algo.sigma=0.1", "algo.elite_episodes=5")
    budget = GA_TASKS[task]
    return Comparison(
        method="ga",
        task=task,
        budget=budget,
        seeds=QUICK_SEEDS if task == "CartPole-v1" else OFF_POLICY_SEEDS,
        bin=budget // 10,
        population=50,
        ours=Side("neuroplug", ("algo=ga", f"env={ENVS[task]}", *STRATEGY_NET, *settings)),
        references=(Side("evotorch", ("--algo", "ga")),),
        notes="50 members, mutation power 0.1 on both sides, the first generation fresh "
        "networks on both; ours truncation 8 and 5-episode elite rounds (its docs' CartPole "
        "settings), EvoTorch's elitist GA re-evaluating its parents; the same 16-unit tanh "
        "policy; the score on both sides the mean of every episode of a generation's main "
        "evaluation (EvoTorch's parents and children, not its survivors).",
    )


def _evotorch(method: str) -> Side:
    """EvoTorch's ``method`` at our defaults (es: sigma 0.02; the others' 0.1 is EvoTorch's
    script default too), starting from our network's initialisation."""
    return Side("evotorch", ("--algo", method) + (("--sigma", "0.02") if method == "es" else ()))


def _cooperation(method: str, task: str) -> Comparison:
    """A hybrid of evolution and TD3 (``cem_rl``, ``erl``) beside ``td3`` alone at equal
    env steps (all of the population's frames counted): does the cooperation pay?"""
    budget, seeds, width = (
        (100_000, OFF_POLICY_SEEDS, 10_000) if task == "Hopper-v4" else (20_000, QUICK_SEEDS, 2_000)
    )
    td3 = ("algo=td3", f"env={ENVS[task]}")
    if task == "Pendulum-v1":
        td3 = (*td3, *TD3_PENDULUM)
    reuse = f"td3/{task}/neuroplug" if task in ("Hopper-v4", "HalfCheetah-v4") else ""
    if task == "Pendulum-v1" and method != "cem_rl":
        reuse = f"cem_rl/{task}/td3"
    return Comparison(
        method=method,
        task=task,
        budget=budget,
        seeds=seeds,
        bin=width,
        ours=Side("neuroplug", (f"algo={method}", f"env={ENVS[task]}")),
        references=(Side("td3", td3, runner="neuroplug", records_from=reuse),),
        notes="Ours at its defaults (the paper's population on TD3 at CleanRL's settings); "
        "td3 at its defaults"
        + (
            " but for learning_starts, the hybrids' 10k (its 25k is beyond the budget)"
            if task == "Pendulum-v1"
            else ""
        )
        + "; every env step of the population counts.",
    )


PENDULUM_STARTS = 10_000
"""Where every TD3 on Pendulum starts learning (the hybrids' own; the defaults' 25k is beyond
the 20k budget)."""
TD3_PENDULUM = (f"algo.learning_starts={PENDULUM_STARTS}", "algo.segment_steps=2000")
"""td3's overrides on Pendulum's 20k steps: its default learning_starts (CleanRL's 25k) is
beyond the budget (it would never learn), so the hybrids' own 10k; and a segment (a point
of its curve) every 2k steps, a bin's width: at its default 10k the last bin's score was
the mean of every episode from 10k on, learning included (-665 where its last episodes
scored -120 to -250)."""


def _td3_pendulum() -> Comparison:
    """``td3`` beside CleanRL's and SB3's on Pendulum at the hybrids' budget: 20k env steps,
    learning from 10k on every side (the defaults' 25k is beyond it). Our runs are the
    ``cem_rl`` comparison's td3 reference (the same overrides), not run twice."""
    td3 = SB3_CLEANRL["td3"]
    settings = {**json.loads(td3.arguments[1]), "learning_starts": PENDULUM_STARTS}
    return Comparison(
        method="td3",
        task="Pendulum-v1",
        budget=20_000,
        seeds=QUICK_SEEDS,
        bin=2_000,
        ours=Side(
            "neuroplug",
            ("algo=td3", "env=pendulum", *TD3_PENDULUM),
            records_from="cem_rl/Pendulum-v1/td3",
        ),
        references=(
            Side(
                "cleanrl",
                ("--learning-starts", str(PENDULUM_STARTS)),
                script="td3_continuous_action.py",
            ),
            sb3("td3", **settings),
        ),
        notes="CleanRL's settings on every side but learning_starts, 10k of the 20k steps "
        "(its 25k is beyond the budget); ours are the cem_rl comparison's td3 runs.",
    )


PBT_TASKS = {"Acrobot-v1": 2_400_000, "CartPole-v1": 800_000}
"""PBT's tasks and budgets: 8 PPO members' frames in all."""


def _pbt(task: str) -> Comparison:
    """``pbt`` over 8 PPO members beside the same 8 starting settings trained fixed
    (no exploit, no explore), at equal frames: its best member against the best fixed
    setting's."""
    population = (
        "algo=pbt", "algo.learner=ppo", "algo.members=8", f"env={ENVS[task]}",
        "algo.initial.learning_rate=[1e-5,1e-2]", "algo.initial.entropy_coef=[1e-4,1e-1]",
    )  # fmt: skip
    fixed = (*population, "algo.exploit=false", "algo.mutation_probability=0")
    budget = PBT_TASKS[task]
    return Comparison(
        method="pbt",
        task=task,
        budget=budget,
        seeds=OFF_POLICY_SEEDS,
        bin=budget // 10,
        ours=Side("neuroplug", population, metric="best_member"),
        references=(Side("fixed", fixed, runner="neuroplug", metric="best_member"),),
        notes="8 PPO members, learning rates log-uniform in [1e-5, 1e-2] and entropy "
        "coefficients in [1e-4, 0.1]; the fixed run starts from the same draws. Score: "
        "the best member's objective (its recent training return).",
    )


SAMPLE_FACTORY_APPO = Side(
    "sample_factory",
    (
        "--num_envs_per_worker=8", "--worker_num_splits=1", "--rollout=32",
        "--batch_size=128", "--num_batches_per_epoch=2", "--num_epochs=8",
        "--shuffle_minibatches=True", "--with_vtrace=False", "--value_bootstrap=True",
        "--learning_rate=0.001", "--lr_schedule=constant", "--adam_eps=1e-5", "--gamma=0.98",
        "--gae_lambda=0.8", "--ppo_clip_ratio=0.2", "--ppo_clip_value=0.2",
        "--max_grad_norm=0.5", "--value_loss_coeff=0.5", "--exploration_loss_coeff=0.0",
        "--max_policy_lag=100", "--use_rnn=False", "--recurrence=1",
        "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh",
        "--actor_critic_share_weights=False", "--normalize_input=False",
        "--normalize_returns=False",
    ),
)  # fmt: skip
"""Sample Factory 2.1.1's APPO at our discrete preset's settings where it has them: 8 envs,
rollouts of 32, 8 epochs of 2 shuffled minibatches, GAE (its V-trace fails on a
non-recurrent policy: ``'AttrDict' object has no attribute 'advantages'``), truncated
episodes bootstrapped, values clipped within 0.2 of the old ones, Adam's eps 1e-5, gradient
norm 0.5, separate 64-64 tanh actor and critic without normalisations (its defaults: a
512-512 ELU encoder, a GRU, both normalisations). Left as they are: its initialisation
(orthogonal, gain 1 on every layer; ours OpenAI's normalised columns, 0.01 on the policy's
last layer)."""
APPO_TASKS = {"CartPole-v1": 100_000, "Acrobot-v1": 100_000}
"""APPO's tasks and env-step budgets."""


def _appo(task: str) -> Comparison:
    """``appo`` beside Sample Factory's APPO, both at our discrete preset's settings with
    GAE and a constant learning rate (Sample Factory has no linear decay)."""
    budget = APPO_TASKS[task]
    ours = ("algo=appo", f"env={ENVS[task]}", "algo.with_vtrace=false", "algo.anneal_lr=false")
    return Comparison(
        method="appo",
        task=task,
        budget=budget,
        seeds=QUICK_SEEDS,
        bin=budget // 10,
        ours=Side("neuroplug", ours),
        references=(SAMPLE_FACTORY_APPO,),
        notes="Our discrete preset's settings on both sides (8 envs, rollouts of 32, 8 epochs "
        "of 2 minibatches, learning rate 1e-3 held constant, gamma 0.98, lambda 0.8, clip "
        "0.2, no entropy bonus) with GAE, separate 64-64 tanh actor and critic; Sample "
        "Factory serial with one rollout worker (one core), ours one torch thread (its "
        "sampler and learner threads side by side); each side's own initialisation.",
    )


@dataclass(frozen=True)
class QDTask:
    """A quality-diversity task as ``benchmarks/quality_diversity.py`` sets it on both
    sides: episodes, a grid of 50 cells over one descriptor, the QD-score's offset."""

    episode_steps: int
    behavior: str
    """Ours: the descriptor (pyribs' script reads the same final x position)."""
    observations: int
    """Entries of ``behavior``'s descriptor (a final observation's: the grid keeps the first)."""
    low: float
    high: float
    offset: float
    """QD-score offset and CMA-MAE's starting threshold: the task's lowest return."""
    generations: int

    def ours(self) -> tuple[str, ...]:
        """Our archive's overrides: a final observation's other entries get one cell each,
        so the grid is over its first alone, as pyribs' one-dimensional one."""
        rest = self.observations - 1
        cells = ",".join(["50"] + ["1"] * rest)
        bounds = ",".join([f"[{self.low},{self.high}]"] + ["[-100,100]"] * rest)
        return (
            f"env.max_episode_steps={self.episode_steps}", f"algo.behavior={self.behavior}",
            f"algo.cells=[{cells}]", f"algo.bounds=[{bounds}]", f"algo.qd_offset={self.offset}",
            "net.hidden_sizes=[64,64]", "net.activation=tanh", "backend.torch_threads=1",
        )  # fmt: skip

    def pyribs(self) -> tuple[str, ...]:
        """``peers/pyribs_qd.py``'s arguments for the same archive."""
        return (
            "--episode-steps", str(self.episode_steps), "--cells", "50",
            "--low", str(self.low), "--high", str(self.high), "--offset", str(self.offset),
        )  # fmt: skip


QD_TASKS = {
    "CartPole-v1": QDTask(500, "final_obs", 4, -2.4, 2.4, 0.0, generations=30),
    "HalfCheetah-v4": QDTask(200, "final_position", 1, -5.0, 5.0, -200.0, generations=250),
}
"""The QD tasks of ``benchmarks/quality_diversity.py``: CartPole's cart position at the
end, HalfCheetah's final x position (200-step episodes)."""
QD_BATCH = 64
"""Evaluations per generation on every QD side."""
QD_EMITTER_BATCH = 16
"""CMA-MAE's solutions per emitter and generation (``QD_BATCH`` of them: 4 emitters)."""

QD_VARIATION = {
    "map_elites": f"Iso+LineDD (0.005, 0.05) from {QD_BATCH} fresh networks (ours: its "
    "initialisation plus init_sigma 0.1 noise; pyribs: PyTorch's default)",
    "cma_mae": f"{QD_BATCH // QD_EMITTER_BATCH} separable CMA-ES emitters of "
    f"{QD_EMITTER_BATCH}, sigma0 0.05, ranked by improvement, "
    "archive learning rate 0.01 (ours: each emitter at its own fresh network; pyribs: all at "
    "one, PyTorch's default initialisation)",
}
"""How each QD method makes its offspring, on both sides, and where the sides' first
networks differ."""


def _qd(method: str, task: str) -> Comparison:
    """``map_elites``/``cma_mae`` beside pyribs on the same task, descriptor, archive and
    emitters, at equal evaluations; the score is the QD-score."""
    qd = QD_TASKS[task]
    emitters = (
        f"algo.emitters={QD_BATCH // QD_EMITTER_BATCH}",
        f"algo.emitter_batch={QD_EMITTER_BATCH}",
        "algo.sigma0=0.05",
    )
    settings = ("algo.reevaluation_episodes=0", *(emitters if method == "cma_mae" else ()))
    return Comparison(
        method=method,
        task=task,
        budget=qd.generations * QD_BATCH,
        seeds=QUICK_SEEDS,
        bin=qd.generations * QD_BATCH // 10,
        unit="evaluations",
        population=QD_BATCH,
        ours=Side(
            "neuroplug",
            (f"algo={method}", f"env={ENVS[task]}", *qd.ours(), *settings),
            metric="algo/qd_score",
        ),
        references=(
            Side(
                "pyribs", ("--algo", method, "--emitter-batch", str(QD_EMITTER_BATCH), *qd.pyribs())
            ),
        ),
        also=("coverage",),
        notes=f"{QD_BATCH} evaluations a generation, one episode each, {QD_VARIATION[method]}; "
        f"50 cells over [{qd.low:g}, {qd.high:g}], QD-score offset {qd.offset:g}, the same "
        "64-64 tanh MLP; ours without its re-evaluation of elites "
        "(algo.reevaluation_episodes=0), which pyribs lacks.",
    )


def _pga_me(task: str) -> Comparison:
    """``pga_me`` beside ``map_elites`` (Iso+LineDD alone) on the same archive, batch and
    network at equal env steps: does the policy-gradient variation pay?"""
    qd = QD_TASKS[task]
    archive = (f"env={ENVS[task]}", *qd.ours())
    budget = 2_000_000
    return Comparison(
        method="pga_me",
        task=task,
        budget=budget,
        seeds=OFF_POLICY_SEEDS,
        bin=budget // 10,
        population=100,
        ours=Side("neuroplug", ("algo=pga_me", *archive), metric="algo/qd_score"),
        references=(
            Side(
                "map_elites",
                ("algo=map_elites", *archive, "algo.reevaluation_episodes=0"),
                runner="neuroplug",
                metric="algo/qd_score",
            ),
        ),
        also=("coverage",),
        notes="100 offspring a generation on both (PGA-ME's default, QDax's): ours half by "
        "Iso+LineDD and half by 100 policy-gradient steps on its TD3 critic (its defaults), "
        "map_elites all by Iso+LineDD (0.005, 0.05); the archive of the pyribs comparison, "
        "the same 64-64 tanh MLP; no re-evaluation of elites on either.",
    )


COMPARISONS: tuple[Comparison, ...] = (
    Comparison(
        method="ppo",
        task="CartPole-v1",
        budget=100_000,
        seeds=QUICK_SEEDS,
        bin=10_000,
        ours=Side("neuroplug", ("algo=ppo", "env=cartpole")),
        references=(RL_ZOO_PPO_CARTPOLE, Side("cleanrl", script="ppo.py")),
        notes="RL Zoo's settings on ours and SB3 (budget 100k, RL Zoo's); CleanRL's ppo.py "
        "at its own defaults for the same steps.",
    ),
    Comparison(
        method="ppo",
        task="Hopper-v4",
        budget=12 * 16_384,
        seeds=QUICK_SEEDS,
        bin=16_384,
        ours=Side("neuroplug", ("algo=ppo", "env=hopper", "net.hidden_sizes=[64,64]")),
        references=(Side("cleanrl", script="ppo_continuous_action.py"),),
        notes="CleanRL's ppo_continuous_action.py settings on both sides (one env, "
        "rollouts of 2048 steps, its 64-64 tanh networks, rewards scaled by the return's "
        "std); 12 of our segments. Ours does not normalise observations (CleanRL's does).",
    ),
    Comparison(
        method="dqn",
        task="CartPole-v1",
        budget=50_000,
        seeds=QUICK_SEEDS,
        bin=5_000,
        ours=Side("neuroplug", ("algo=dqn", "env=cartpole")),
        references=(RL_ZOO_DQN_CARTPOLE, Side("cleanrl", script="dqn.py")),
        notes="Ours: its preset after RL Zoo's (rounds of 8 envs x 8 steps, double DQN, "
        "3-step returns); SB3 at RL Zoo's settings and budget; CleanRL's dqn.py at its "
        "defaults for the same steps.",
    ),
    Comparison(
        method="dqn",
        task="Acrobot-v1",
        budget=100_000,
        seeds=QUICK_SEEDS,
        bin=10_000,
        ours=Side("neuroplug", ("algo=dqn", "env=acrobot")),
        references=(RL_ZOO_DQN_ACROBOT,),
        notes="Ours at its defaults for vector tasks; SB3 at RL Zoo's Acrobot settings and budget.",
    ),
    *(
        _strategy(
            method, task, (_evotorch(method),), population=50 if method in ("es", "pgpe") else 0
        )
        for method in ("es", "pgpe", "snes", "xnes")
        for task in STRATEGY_TASKS
    ),
    *(
        _strategy(
            method,
            task,
            (_evotorch(method), Side("pycma", ("--diagonal",) if method == "sep_cma_es" else ())),
        )
        for method in ("cma_es", "sep_cma_es")
        for task in STRATEGY_TASKS
    ),
    *(_ga(task) for task in GA_TASKS),
    _off_policy("sac", "HalfCheetah-v4"),
    _off_policy("sac", "Hopper-v4"),
    _td3_pendulum(),
    _off_policy("td3", "HalfCheetah-v4"),
    _off_policy("td3", "Hopper-v4"),
    *(
        _cooperation(method, task)
        for method in ("cem_rl", "erl")
        for task in ("Pendulum-v1", "Hopper-v4")
    ),
    *(_pbt(task) for task in PBT_TASKS),
    *(_appo(task) for task in APPO_TASKS),
    _shared_policy(
        "simple_spread_v3",
        "mpe2.simple_spread_v3",
        "simple_spread",
        {"N": 3, "max_cycles": 25, "continuous_actions": False},
    ),  # fmt: skip
    _ma_pong(),
    *(_qd(method, task) for method in ("map_elites", "cma_mae") for task in QD_TASKS),
    _pga_me("HalfCheetah-v4"),
)
"""Every comparison, in the order the suite runs them."""


def select(only: list[str] | None) -> list[Comparison]:
    """The comparisons whose method or ``method/task`` key is in ``only`` (all without)."""
    if not only:
        return list(COMPARISONS)
    chosen = [c for c in COMPARISONS if c.method in only or c.key in only]
    known = sorted({c.method for c in COMPARISONS} | {c.key for c in COMPARISONS})
    unknown = [name for name in only if not any(name in (c.method, c.key) for c in chosen)]
    if unknown:
        raise SystemExit(
            f"--only: no comparison named {', '.join(unknown)}; known: {', '.join(known)}"
        )
    return chosen


DOC_PAGES = {
    "ppo": "learners/ppo.md",
    "dqn": "learners/dqn.md",
    "sac": "learners/td3-sac.md",
    "td3": "learners/td3-sac.md",
    "pbt": "learners/pbt.md",
    "appo": "learners/appo.md",
    "es": "algorithms/es.md",
    "pgpe": "algorithms/pgpe.md",
    "snes": "algorithms/nes.md",
    "xnes": "algorithms/nes.md",
    "cma_es": "algorithms/cma-es.md",
    "sep_cma_es": "algorithms/cma-es.md",
    "ga": "algorithms/ga.md",
    "cem_rl": "algorithms/cem-rl-erl.md",
    "erl": "algorithms/cem-rl-erl.md",
    "map_elites": "algorithms/quality-diversity.md",
    "cma_mae": "algorithms/quality-diversity.md",
    "pga_me": "algorithms/quality-diversity.md",
}
"""Each method's docs page (under ``docs/``), whose Results section shows its parity rows."""


def budgets_markdown() -> str:
    """The suite's comparisons as the parity page's table: method, task, budget, seeds,
    references (``docs/parity.md`` holds it; a test checks they agree)."""
    lines = [
        "| method | task | budget | seeds | beside | settings |",
        "|---|---|---|---|---|---|",
    ]
    for comparison in COMPARISONS:
        unit = "env steps" if comparison.unit == "env_steps" else "evaluations"
        references = ", ".join(side.name for side in comparison.references)
        seeds = ", ".join(str(seed) for seed in comparison.seeds)
        lines.append(
            f"| `{comparison.method}` | {comparison.task} | {comparison.budget:,} {unit} "
            f"| {seeds} | {references} | {comparison.notes} |"
        )
    return "\n".join(lines)
