"""The settings of this distribution's learners (their config schemas and presets).

They live apart from the learners so that reading them imports no torch: the command line
checks a value (``algo.learning_rate=abc``) and prints ``--help`` from these classes alone,
named by the ``neuroplug.learner_configs`` entry points. Each learner's file imports its
own from here. PBT's settings include how a population's are resolved from its members'
learner (:meth:`PBTConfig.resolve_presets`), which loads that learner only when a run is built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from neuroplug import registry
from neuroplug.api import LearnerConfig, Mutable, Preset
from neuroplug.config.typed import to_dataclass
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, PluginError, require
from neuroplug.presets import PresetFiller

ENCODER_PRECISIONS = ("auto", "float32", "bfloat16")
"""The values of ``algo.encoder_precision``."""


@dataclass
class PPOUpdateConfig(LearnerConfig):
    """Settings of the PPO update. Unset (``None``) fields take the reference settings of
    the run's kind of task (:meth:`presets`): CleanRL's ``ppo_atari_envpool.py`` on frames
    (Sample Factory's Atari APPO uses the same), RL Zoo's CartPole-v1 PPO on discrete
    vector tasks, CleanRL's ``ppo_continuous_action.py`` on continuous ones."""

    rollout_length: int | None = None
    """T: steps per env per rollout."""
    epochs: int | None = None
    """E: passes over each rollout."""
    minibatches: int | None = None
    """M: minibatches per epoch."""
    learning_rate: float | None = None
    """Adam step size at the start."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run's budget (``run.max_frames``,
    else ``run.max_segments`` segments)."""
    gamma: float | None = None
    """Discount."""
    gae_lambda: float | None = None
    """GAE's lambda."""
    clip_coef: float | None = None
    """eps: the surrogate's (and the value loss's) clipping range."""
    clip_value_loss: bool = True
    """Clip the value loss around the old values."""
    value_coef: float = 0.5
    """c_v: weight of the value loss."""
    entropy_coef: float | None = None
    """c_e: weight of the entropy bonus."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    normalize_advantages: bool = True
    """Standardise advantages per minibatch."""
    recurrence: int = -1
    """With a recurrent core (``net.core=gru``): steps of backpropagation through time.
    The update re-runs the core over chunks of this many steps from the states stored at
    their starts, and minibatches are made of whole chunks (Sample Factory's
    ``--recurrence``); -1: the whole rollout. ``rollout_length`` must be a multiple."""
    encoder_precision: str = "float32"
    """The arithmetic of the encoder (the layers before the core, or before the heads) in
    the update's forward and backward: ``float32``, or ``bfloat16``, run under PyTorch's
    autocast (mixed precision: the weights, Adam's moments, the core, the heads and the
    losses stay float32; acting stays float32). ``auto``: ``bfloat16`` for a
    convolutional encoder on a CPU that computes it natively (AVX512-BF16 or AMX), where
    one update of the Atari preset took 0.31 s instead of 0.54 s on 2 cores
    (``benchmarks/results/encoder_precision.md``), ``float32`` elsewhere. Elsewhere
    PyTorch emulates bfloat16, slower than float32; the start-up line says which."""

    # What population-based training may change: Sample Factory's mutable PPO settings
    # (its learning rate, entropy and value coefficients, clip ratio, gradient-norm clip,
    # and, when asked, the discount).
    mutable: ClassVar[dict[str, Mutable]] = {
        "learning_rate": Mutable(1e-8, 1.0),
        "entropy_coef": Mutable(0.0, 1.0),
        "value_coef": Mutable(1e-3, 10.0),
        "clip_coef": Mutable(1e-2, 1.0),
        "max_grad_norm": Mutable(1e-2, 100.0),
        "gamma": Mutable(0.5, 0.9999, complement=True),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()
        return {
            "pixels": base["pixels"].extended(
                "CleanRL ppo_atari_envpool.py",
                rollout_length=128,
                epochs=4,
                minibatches=4,
                learning_rate=2.5e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.1,
                entropy_coef=0.01,
            ),
            # Sample Factory's Doom settings (sample_factory/cfg/cfg.py and
            # sf_examples/vizdoom/doom/doom_params.py): batches of 1024 transitions, one
            # epoch of one minibatch, rollouts of 32 steps (its BPTT length with a core);
            # its exploration loss coefficient as the entropy's.
            "doom": base["pixels"].extended(
                "Sample Factory sf_examples/vizdoom",
                num_envs=32,
                env_groups=2,
                reward_clip=False,
                episodic_life=False,
                rollout_length=32,
                epochs=1,
                minibatches=1,
                learning_rate=1e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.1,
                entropy_coef=0.001,
            ),
            "discrete": base["discrete"].extended(
                "RL Zoo CartPole-v1 PPO",
                rollout_length=32,
                epochs=20,
                minibatches=1,
                learning_rate=1e-3,
                gamma=0.98,
                gae_lambda=0.8,
                clip_coef=0.2,
                entropy_coef=0.0,
            ),
            "continuous": base["continuous"].extended(
                "CleanRL ppo_continuous_action.py",
                num_envs=1,
                segment_steps=16384,
                rollout_length=2048,
                epochs=10,
                minibatches=32,
                learning_rate=3e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.2,
                entropy_coef=0.0,
            ),
        }

    def check(self) -> None:
        super().check()
        require(
            self.recurrence == -1 or self.recurrence >= 1,
            "algo.recurrence",
            f"got {self.recurrence}",
            "-1 (the whole rollout) or an integer >= 1",
        )
        if self.recurrence >= 1:
            require(
                self.rollout_length % self.recurrence == 0,
                "algo.recurrence",
                f"{self.recurrence} does not divide algo.rollout_length={self.rollout_length}",
                "a divisor of algo.rollout_length, or -1",
            )
        for name in ("rollout_length", "epochs", "minibatches"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.encoder_precision in ENCODER_PRECISIONS,
            "algo.encoder_precision",
            f"got {self.encoder_precision!r}",
            ", ".join(ENCODER_PRECISIONS),
        )
        transitions = self.num_envs * self.rollout_length
        require(
            self.minibatches <= transitions,
            "algo.minibatches",
            f"{self.minibatches} minibatches of {transitions} transitions",
            "at most algo.num_envs * algo.rollout_length",
        )
        require(
            self.learning_rate > 0, "algo.learning_rate", f"got {self.learning_rate}", "a float > 0"
        )
        for name in ("gamma", "gae_lambda"):
            value = getattr(self, name)
            require(0 <= value <= 1, f"algo.{name}", f"got {value}", "a float in [0, 1]")
        require(self.clip_coef > 0, "algo.clip_coef", f"got {self.clip_coef}", "a float > 0")
        for name in ("value_coef", "entropy_coef", "max_grad_norm"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")


@dataclass
class PPOConfig(PPOUpdateConfig):
    """PPO settings (CleanRL's Atari defaults; ``conf/algo/ppo.yaml`` names the sources)."""


@dataclass
class APPOConfig(PPOUpdateConfig):
    """APPO settings: the PPO update's (Sample Factory's Atari values) plus the lag's."""

    max_policy_lag: int = 100
    """Rollouts sampled more than this many SGD steps ago are dropped, not learned from."""
    with_vtrace: bool | None = None
    """V-trace targets and advantages instead of GAE (off in Sample Factory's Atari runs)."""
    vtrace_rho: float = 1.0
    """rho-bar: truncation of the importance weights in the advantages."""
    vtrace_c: float = 1.0
    """c-bar: truncation of the importance weights along the trace."""
    queue_size: int | None = None
    """Rollouts waiting for the learner."""
    drop_when_full: bool = False
    """When the queue is full: drop its oldest rollout, so the sampler never waits (for a
    learner on its own GPU, where sampling is the bottleneck), or, as Sample Factory does,
    wait for room, so every rollout sampled is learned from. Waiting is the default: where
    the learner and the envs share CPU cores, a sampler that runs ahead steals the cores the
    learner needs for rollouts it then drops (on 2 cores it dropped half of Pong's)."""

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        ppo = super().presets()
        return {
            "pixels": ppo["pixels"].extended(
                "Sample Factory sf_examples/envpool/atari (CleanRL's PPO values)",
                with_vtrace=False,
                queue_size=2,
            ),
            "doom": ppo["doom"].extended(
                "Sample Factory sf_examples/vizdoom", with_vtrace=False, queue_size=2
            ),
            # Fewer epochs than PPO's 20, so the learner keeps up with the sampler; V-trace
            # corrects the lag, and a one-rollout queue keeps the data fresh.
            "discrete": ppo["discrete"].extended(
                "RL Zoo CartPole-v1 PPO, 8 epochs of 2 minibatches, V-trace",
                epochs=8,
                minibatches=2,
                with_vtrace=True,
                queue_size=1,
            ),
            "continuous": ppo["continuous"].extended(
                "CleanRL ppo_continuous_action.py", with_vtrace=False, queue_size=2
            ),
        }

    def check(self) -> None:
        super().check()
        require(
            self.max_policy_lag >= 0,
            "algo.max_policy_lag",
            f"got {self.max_policy_lag}",
            "an integer >= 0",
        )
        for name in ("vtrace_rho", "vtrace_c"):
            value = getattr(self, name)
            require(value > 0, f"algo.{name}", f"got {value}", "a float > 0")
        require(
            self.queue_size >= 1,
            "algo.queue_size",
            f"got {self.queue_size}",
            "an integer >= 1",
        )


@dataclass
class DQNConfig(LearnerConfig):
    """DQN settings. Unset (``None``) fields take the reference settings of the run's kind
    of task (:meth:`presets`): the Nature DQN's on frames, RL Zoo's CartPole-v1 DQN (in
    shorter rounds, with double DQN and 3-step returns) on vector tasks."""

    buffer_size: int | None = None
    """Transitions kept (Nature DQN: 1M)."""
    batch_size: int | None = None
    """Transitions per gradient step."""
    learning_rate: float | None = None
    """Adam step size."""
    gamma: float = 0.99
    """Discount."""
    learning_starts: int | None = None
    """Env steps stored before learning begins."""
    train_frequency: int | None = None
    """Env steps per env between training phases."""
    gradient_steps: int | None = None
    """Gradient steps per training phase."""
    target_update_interval: int | None = None
    """Env steps between copies of Q into the target network."""
    exploration_fraction: float | None = None
    """Share of the run's budget over which epsilon falls from 1 to ``final_epsilon``."""
    final_epsilon: float | None = None
    """Epsilon after the decay (Nature DQN: 0.1)."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip."""
    double_q: bool | None = None
    """Double DQN: the online network picks the next action, the target values it."""
    n_step: int | None = None
    """Rewards summed per target before bootstrapping (1: the Nature DQN; Rainbow: 3)."""
    checkpoint_replay: bool = False
    """Keep the replay buffer in checkpoints (large on Atari; makes resume exact on CPU)."""

    # What population-based training may change (the discount is built into the buffer's
    # n-step returns, so it stays).
    mutable: ClassVar[dict[str, Mutable]] = {
        "learning_rate": Mutable(1e-8, 1.0),
        "max_grad_norm": Mutable(1e-2, 100.0),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()
        # RL Zoo's CartPole-v1 DQN (buffer 100k, learning starts 1000, epsilon 1 -> 0.04
        # over 16% of the budget, a gradient step per two env steps) in rounds of 8 envs x 8
        # steps then 32 gradient steps, the target copied after each round; plus double DQN
        # and Rainbow's 3-step returns. RL Zoo trains a 256-256 ReLU net at lr 2.3e-3 and
        # batch 64; on the 64-64 tanh net env=cartpole picks, lr 1e-3 and batch 128 solved
        # for seeds 0-2 where those did not (benchmarks/results/learners.md). Segments of
        # 500 steps: the default budget of 100 segments is then RL Zoo's budget of 50k
        # steps, over whose first 16% epsilon falls.
        vector = base["discrete"].extended(
            "RL Zoo CartPole-v1 DQN in rounds of 8x8 steps, lr 1e-3, batch 128, double DQN, "
            "3-step returns",
            num_envs=8,
            segment_steps=500,
            buffer_size=100_000,
            batch_size=128,
            learning_rate=1e-3,
            learning_starts=1000,
            train_frequency=8,
            gradient_steps=32,
            target_update_interval=10,
            exploration_fraction=0.16,
            final_epsilon=0.04,
            double_q=True,
            n_step=3,
        )
        return {
            "pixels": base["pixels"].extended(
                "the Nature DQN (Adam at 1e-4 and learning from 80k steps, as CleanRL's dqn_atari.py)",
                num_envs=1,
                env_groups=1,
                segment_steps=50_000,
                buffer_size=1_000_000,
                batch_size=32,
                learning_rate=1e-4,
                learning_starts=80_000,
                train_frequency=4,
                gradient_steps=1,
                target_update_interval=10_000,
                exploration_fraction=0.1,
                final_epsilon=0.1,
                double_q=False,
                n_step=1,
            ),
            "discrete": vector,
        }

    def memory_bytes(self, env: EnvSpec) -> int:
        # Imported here: the buffer module imports torch, this schema does not.
        from neuroplug.rl.replay_buffer import ReplayBuffer

        return ReplayBuffer.bytes_needed(self.buffer_size, self.num_envs, env)

    def check_task(self, env: EnvSpec) -> None:
        require(
            env.discrete,
            "algo",
            f"dqn needs discrete actions; {env.task_id} has continuous ones",
            "a task with discrete actions, or algo=ppo",
        )

    def check(self) -> None:
        super().check()
        require(
            self.batch_size >= 1, "algo.batch_size", f"got {self.batch_size}", "an integer >= 1"
        )
        require(
            self.buffer_size >= self.batch_size,
            "algo.buffer_size",
            f"{self.buffer_size} is smaller than algo.batch_size={self.batch_size}",
            "an integer >= algo.batch_size",
        )
        require(
            0.0 <= self.final_epsilon <= 1.0,
            "algo.final_epsilon",
            f"got {self.final_epsilon}",
            "a float in [0, 1]",
        )
        require(
            0.0 <= self.exploration_fraction <= 1.0,
            "algo.exploration_fraction",
            f"got {self.exploration_fraction}",
            "a float in [0, 1]",
        )
        require(0 <= self.gamma <= 1, "algo.gamma", f"got {self.gamma}", "a float in [0, 1]")
        require(
            self.learning_rate > 0, "algo.learning_rate", f"got {self.learning_rate}", "a float > 0"
        )
        require(
            self.buffer_size >= self.n_step * self.num_envs,
            "algo.buffer_size",
            f"{self.buffer_size} cannot hold algo.n_step={self.n_step} steps of "
            f"algo.num_envs={self.num_envs} envs",
            "an integer >= algo.n_step * algo.num_envs",
        )
        for name in ("train_frequency", "gradient_steps", "target_update_interval", "n_step"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.learning_starts >= 0,
            "algo.learning_starts",
            f"got {self.learning_starts}",
            "an integer >= 0",
        )


MEMBER_LEVEL = ("num_envs", "reward_clip", "episodic_life")
"""Settings of each member, given as ``algo.member.<field>``; the population's own are
derived from them (its envs are the members' times K). ``algo.segment_steps`` may be given
for the whole population (each member's is a K-th of it) or as ``algo.member.segment_steps``."""

INTERVALS = {"pixels": (5_000_000, 20_000_000)}
"""(interval_frames, start_frames) by kind of task: Sample Factory's on Atari; vector tasks,
which learn in 10^5 frames, take :data:`VECTOR_INTERVAL`."""
VECTOR_INTERVAL = (20_000, 0)


@dataclass
class PBTConfig(LearnerConfig):
    """Population-based training settings; each member's own are ``algo.member.<field>``
    (the learner's fields, unset ones from its preset for the task)."""

    open_fields: ClassVar[tuple[str, ...]] = ("member", "initial", "per_member")

    learner: str = "ppo"
    """The members' learner (any installed learner that declares mutable settings)."""
    members: int = 8
    """K: learners in the population."""
    member: dict[str, Any] = field(default_factory=dict)
    """The settings every member starts from: the learner's own fields
    (``algo.member.learning_rate=3e-4``)."""
    initial: dict[str, Any] = field(default_factory=dict)
    """Per-member initial ranges of mutable settings, ``[low, high]``: drawn
    log-uniformly for rates (uniformly where the learner says so); the reference member
    keeps ``member``'s value (``algo.initial.learning_rate=[1e-4,1e-2]``)."""
    per_member: dict[str, Any] = field(default_factory=dict)
    """Explicit initial values of mutable settings, one per member
    (``algo.per_member.learning_rate=[1e-3,1e-6,1e-6,1e-6]``); wins over ``initial``."""
    interval_frames: int | None = None
    """Frames each member plays between exploit-and-explore rounds (Sample Factory's
    ``pbt_period_env_steps``); unset: 5M on Atari, 20k on vector tasks."""
    start_frames: int | None = None
    """No round before each member has played this many frames (``pbt_start_mutation``);
    unset: 20M on Atari, 0 on vector tasks."""
    quantile: float = 0.3
    """The bottom and top fractions of members (``pbt_replace_fraction``)."""
    margin: float = 0.1
    """A bottom member copies a top one only when the top one's objective is higher by more
    than this fraction of the bottom one's (``pbt_replace_reward_gap``)..."""
    margin_absolute: float = 1e-6
    """...and by more than this (``pbt_replace_reward_gap_absolute``)."""
    mutation_probability: float = 0.15
    """Chance that each mutable setting changes in a round (``pbt_mutation_rate``)."""
    factor_low: float = 1.1
    """Smallest factor a setting changes by (``pbt_perturb_min``)."""
    factor_high: float = 1.5
    """Largest factor (``pbt_perturb_max``)."""
    mutate: list[str] | None = None
    """The settings that may change; null: every setting the learner declares mutable but
    the discount (Sample Factory mutates gamma only with ``pbt_optimize_gamma``)."""
    reference_member: bool = True
    """Member 0 is never changed (Sample Factory's policy 0): the baseline."""
    exploit: bool = True
    """Bottom members copy top ones; off, members only mutate (an ablation)."""
    objective_games: int = 10
    """A member's objective is the mean true score of its last this many games."""

    def resolve_presets(self, env: EnvSpec, fill: PresetFiller) -> tuple[PBTConfig, str]:
        """Resolve the members' settings with their learner's preset, check every
        population setting against the learner's declarations, and derive the population's
        own envs and segment from the members'."""
        for name in MEMBER_LEVEL:
            require(
                getattr(self, name) is None,
                f"algo.{name}",
                "is each member's setting under algo=pbt",
                f"algo.member.{name}",
            )
        require(self.members >= 2, "algo.members", f"got {self.members}", "an integer >= 2")
        schema = learner_class(self.learner).config_class
        if self.segment_steps is not None:
            require(
                "segment_steps" not in self.member,
                "algo.segment_steps",
                "is given twice: for the population and as algo.member.segment_steps",
                "one of them",
            )
            require(
                self.segment_steps >= self.members,
                "algo.segment_steps",
                f"got {self.segment_steps} for {self.members} members",
                "at least one step per member",
            )
        member = _resolved_member(self, schema, env, fill)
        mutating = self.check_mutable(schema)
        # Imported here: both modules import torch, which reading this schema does not.
        from neuroplug.devices import available_memory_bytes
        from neuroplug.presets import task_kind

        budget = available_memory_bytes()
        needed = self.members * member.memory_bytes(env)
        if budget is not None and needed > budget:
            raise ConfigError(
                "algo.members",
                f"{self.members} members of {self.learner} need {needed / 2**30:.1f} GiB "
                f"({needed / self.members / 2**30:.2f} GiB each, mostly replay) and "
                f"{budget / 2**30:.1f} GiB is available",
                "fewer algo.members or a smaller algo.member.buffer_size",
            )
        interval, start = INTERVALS.get(task_kind(env), VECTOR_INTERVAL)
        resolved = dataclasses.replace(
            self,
            member={f.name: getattr(member, f.name) for f in dataclasses.fields(member)},
            mutate=mutating,
            num_envs=member.num_envs * self.members,
            env_groups=self.env_groups or member.env_groups,
            segment_steps=member.segment_steps * self.members,
            reward_clip=member.reward_clip,
            episodic_life=member.episodic_life,
            torch_threads=_population_threads(self, member),
            device=member.device,
            interval_frames=interval if self.interval_frames is None else self.interval_frames,
            start_frames=start if self.start_frames is None else self.start_frames,
        )
        return resolved, f"{self.members} x {self.learner}"

    def check_mutable(self, schema: type[LearnerConfig]) -> list[str]:
        """The settings that will mutate; every range and value checked against the bounds
        the learner declares."""
        declared = schema.mutable
        require(
            bool(declared),
            "algo.learner",
            f"{self.learner} declares no mutable settings ({schema.__name__}.mutable)",
            "a learner whose config declares mutable settings",
        )
        allowed = ", ".join(declared)
        mutating = (
            [name for name, spec in declared.items() if not spec.complement]
            if self.mutate is None
            else list(self.mutate)
        )
        for name in mutating:
            require(name in declared, "algo.mutate", f"{name!r} cannot mutate", allowed)
        for name, bounds in self.initial.items():
            key = f"algo.initial.{name}"
            require(name in declared, key, "is not a mutable setting", allowed)
            spec = declared[name]
            valid = isinstance(bounds, list | tuple) and len(bounds) == 2
            require(valid, key, f"got {bounds!r}", "[low, high]")
            low, high = (float(bound) for bound in bounds)
            require(
                spec.low <= low <= high <= spec.high and (low > 0 or not spec.log),
                key,
                f"[{low:g}, {high:g}] is outside {name}'s allowed values",
                f"low <= high within [{spec.low:g}, {spec.high:g}]"
                + (", low > 0 (drawn log-uniformly)" if spec.log else ""),
            )
        for name, values in self.per_member.items():
            key = f"algo.per_member.{name}"
            require(name in declared, key, "is not a mutable setting", allowed)
            spec = declared[name]
            valid = isinstance(values, list | tuple) and len(values) == self.members
            require(valid, key, f"got {values!r}", f"a list of algo.members={self.members} values")
            outside = [float(v) for v in values if not spec.low <= float(v) <= spec.high]
            if outside:
                raise ConfigError(
                    key,
                    f"{outside[0]:g} is outside {name}'s allowed values",
                    f"values within [{spec.low:g}, {spec.high:g}]",
                )
        return mutating

    def check(self) -> None:
        super().check()
        require(0 < self.quantile <= 0.5, "algo.quantile", f"got {self.quantile}", "(0, 0.5]")
        for name in ("margin", "margin_absolute"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
        probability = self.mutation_probability
        require(0 <= probability <= 1, "algo.mutation_probability", f"got {probability}", "[0, 1]")
        require(
            1 <= self.factor_low <= self.factor_high,
            "algo.factor_low",
            f"got [{self.factor_low}, {self.factor_high}]",
            "1 <= algo.factor_low <= algo.factor_high",
        )
        require(
            self.interval_frames >= 1,
            "algo.interval_frames",
            f"got {self.interval_frames}",
            "an integer >= 1",
        )
        require(
            self.start_frames >= 0,
            "algo.start_frames",
            f"got {self.start_frames}",
            "an integer >= 0",
        )
        require(
            self.objective_games >= 1,
            "algo.objective_games",
            f"got {self.objective_games}",
            "an integer >= 1",
        )


def learner_class(name: str) -> type:
    """The members' learner plugin, or one line saying which learners there are."""
    names = sorted(set(registry.discover("learners")) - {"pbt"})
    require(name in names, "algo.learner", f"unknown learner {name!r}", ", ".join(names))
    try:
        return registry.load("learners", name)
    except PluginError as error:
        raise ConfigError("algo.learner", str(error)) from error


def _population_threads(config: PBTConfig, member: LearnerConfig) -> int:
    """PyTorch's threads for the population: as given (``algo.torch_threads`` or
    ``algo.member.torch_threads``), else auto (one per core while the machine is otherwise
    idle, 1 under load): K members' updates stacked into one computation are K times one
    member's work, enough to share out even where one member's is not."""
    if config.torch_threads is not None or "torch_threads" in config.member:
        return member.torch_threads
    return 0


def _resolved_member(
    config: PBTConfig, schema: type[LearnerConfig], env: EnvSpec, fill: PresetFiller
) -> LearnerConfig:
    """The members' settings: ``algo.member`` over the learner's preset for ``env``; an
    error in them names ``algo.member.<field>``."""
    values = dict(config.member)
    values.setdefault("device", config.device)
    if config.segment_steps is not None:
        values["segment_steps"] = config.segment_steps // config.members
    if config.torch_threads is not None:
        values.setdefault("torch_threads", config.torch_threads)
    values["name"] = config.learner
    try:
        member = to_dataclass(schema, values, "algo.member")
        member, _ = fill(member, env)
    except ConfigError as error:
        if error.field.startswith("algo.member."):
            raise
        problem = str(error)[len(error.field) + 2 :]
        raise ConfigError(error.field.replace("algo.", "algo.member.", 1), problem) from error
    return member
