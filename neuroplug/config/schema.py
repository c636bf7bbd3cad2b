"""Schemas of the core config groups: ``run``, ``env``, ``net`` and ``logger``.

Plugin groups (``algo``, ``backend``, ``scheduler``) take their schemas from the plugins
themselves (see :mod:`neuroplug.api`). Every schema, theirs and these, is a
:class:`CheckedConfig`: its values are checked when the composed config is turned into the
dataclasses — before any environment starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuroplug.errors import ConfigError, require

ACTIVATIONS = ("tanh", "relu", "elu", "sigmoid", "identity")
INITIALIZATIONS = ("normc", "uniform")
"""How an MLP's linear layers start (:meth:`neuroplug.nets.mlp.MLP.initial_params`)."""
VECTORIZATIONS = ("auto", "in_process", "processes")
LOGGER_KINDS = ("console", "csv", "wandb", "none")
WANDB_MODES = ("online", "offline", "disabled")
MATMUL_PRECISIONS = ("highest", "high", "medium")
"""``torch.set_float32_matmul_precision``'s settings (``run.matmul_precision``)."""


@dataclass
class CheckedConfig:
    """A config dataclass that checks its values when it is built: the base of the core
    groups' schemas, of every plugin's config (:mod:`neuroplug.plugin_configs.bases`) and
    of a network's settings (:mod:`neuroplug.nets.impala_config`)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse a bad value with :func:`neuroplug.errors.require`, in one line naming the
        field and what is allowed, so a bad setting stops a run before anything is built.
        Every config class checks its own fields here and calls ``super().check()``, so a
        subclass's checks add to its bases'; none but the bases defines ``__post_init__``
        (a learner's config is checked once its preset filled every field,
        :class:`neuroplug.api.LearnerConfig`)."""


DEFAULT_UNITS = 100
"""A run's length (generations, or a learner's segments) when the command line gives no
budget (``run.max_generations``, ``run.max_segments`` or ``run.max_frames``)."""


@dataclass
class RunConfig(CheckedConfig):
    """The run: seed, budget, checkpoints, evaluation and output."""

    seed: int = 0
    """Seeds the initial network, the algorithm's RNG and every environment."""
    max_generations: int | None = None
    """An evolution algorithm's budget: stop after this many generations. Null: no limit
    when ``max_frames`` is set, else :data:`DEFAULT_UNITS` (see :attr:`unit_budget`)."""
    max_segments: int | None = None
    """A learner's budget: stop after this many segments (a learner's unit of training
    between evaluations and checkpoints); null as for ``max_generations``."""
    max_frames: int | None = None
    """Stop once this many emulator frames were used (null: no limit)."""
    stop_when_solved: bool = True
    """Stop when the evaluated policy reaches the env's ``solved_return``."""
    eval_interval: int = 5
    """Evaluate the deployed policy every this many generations or segments (0: only at the
    end); with ``stop_when_solved``, also after any one in which half the episodes reached
    the env's ``solved_return``."""
    eval_episodes: int = 10
    """Episodes per evaluation of the deployed policy."""
    eval_at_start: bool = False
    """Also evaluate the starting policy, logged as generation (or segment) 0 at frame 0:
    a fine-tuning curve's first point is the model it started from."""
    checkpoint_interval: int = 1
    """Write a checkpoint every this many generations or segments."""
    checkpoint_share: float = 0.1
    """The most of the run's time writing checkpoints may take: when the last one took
    longer than this share of the time since, the next is put off until it does not (a
    big state, CMA-ES's D x D covariance, is then written every few generations, not every
    one); the last unit, a solve and an interruption are always written; 0: every
    ``checkpoint_interval`` units whatever they cost."""
    retries: int = 2
    """Times a failed evaluation (e.g. a crashed simulator) is retried before the run stops."""
    resume: str | None = None
    """A previous run's output dir to continue from; ``auto``: continue this run's own dir
    (``run.output_dir`` or Hydra's) if it holds a checkpoint, else start there (a requeued
    cluster job picks up where it stopped)."""
    output_dir: str | None = None
    """Where to write; null means Hydra's run dir."""
    deterministic: bool = False
    """Prefer reproducible kernels to the fastest: on CUDA, learners turn cuDNN's
    convolution autotuner (``torch.backends.cudnn.benchmark``) off."""
    matmul_precision: str = "highest"
    """Float32 products' internal precision, in every process of the run
    (``torch.set_float32_matmul_precision``): ``highest``, float32 throughout; ``high``,
    TF32 where the device has it (CUDA); ``medium``, also oneDNN's choice on a CPU, which
    differs by CPU (bfloat16-rounded inputs with float32 sums on some, another float32
    kernel on others; the start-up line says what it measured,
    :func:`neuroplug.runtime.devices.measure_medium_precision`). Results are no longer
    bit-identical to ``highest``, nor between schedulers: oneDNN chooses by a product's
    size, so a population split into small shards (Ray) computes some products as
    ``highest`` does."""

    @property
    def unit_budget(self) -> int | None:
        """The generations (segments, for a learner) the run may take: ``max_generations``
        (``max_segments``) when given; with neither budget given, :data:`DEFAULT_UNITS`; with only ``max_frames``, no limit (the
        frames end the run, not a default the user never asked for)."""
        for budget in (self.max_generations, self.max_segments):
            if budget is not None:
                return budget
        return DEFAULT_UNITS if self.max_frames is None else None

    def check(self) -> None:
        super().check()
        require(0 <= self.seed < 2**31, "run.seed", f"got {self.seed}", "an integer in [0, 2**31)")
        for name in ("max_generations", "max_segments"):
            value = getattr(self, name)
            require(
                value is None or value >= 1,
                f"run.{name}",
                f"got {value}",
                "null or an integer >= 1",
            )
        require(
            self.max_frames is None or self.max_frames >= 1,
            "run.max_frames",
            f"got {self.max_frames}",
            "null or an integer >= 1",
        )
        require(
            self.eval_interval >= 0,
            "run.eval_interval",
            f"got {self.eval_interval}",
            "an integer >= 0",
        )
        require(
            self.eval_episodes >= 1,
            "run.eval_episodes",
            f"got {self.eval_episodes}",
            "an integer >= 1",
        )
        require(
            self.checkpoint_interval >= 1,
            "run.checkpoint_interval",
            f"got {self.checkpoint_interval}",
            "an integer >= 1",
        )
        require(
            self.matmul_precision in MATMUL_PRECISIONS,
            "run.matmul_precision",
            f"got {self.matmul_precision!r}",
            ", ".join(MATMUL_PRECISIONS),
        )
        require(
            0 <= self.checkpoint_share < 1,
            "run.checkpoint_share",
            f"got {self.checkpoint_share}",
            "a share in [0, 1) (0: every checkpoint_interval units)",
        )


POLICY_MAPPINGS = ("shared", "per_team", "per_agent")
"""The mappings of a multi-agent env's agents to policies named by a word
(``env.policy_mapping``); any other is a mapping of agent or role names to policy names."""


@dataclass
class EnvConfig(CheckedConfig):
    """The environment: an EnvPool task (``task_id``), or a gymnasium env (``id`` or
    ``entry_point``), and the settings that change what an episode is."""

    task_id: str = ""
    """Any EnvPool task id (``python -c 'import envpool; print(envpool.list_all_envs())'``)."""
    id: str | None = None
    """A registered gymnasium id (``LunarLander-v3``): the env runs through gymnasium
    (``env=gymnasium``), not EnvPool."""
    entry_point: str | None = None
    """``package.module:Class`` of a gymnasium ``Env`` that is not registered (or a function
    returning one), built with ``kwargs``."""
    parallel_env: str | None = None
    """``package.module:function`` returning a PettingZoo ``ParallelEnv`` (several agents in
    one world: ``mpe2.simple_spread_v3:parallel_env``), built with ``kwargs``; each agent
    is a lane of the env pool (:mod:`neuroplug.envs.multi_agent`)."""
    policy_mapping: Any = "shared"
    """Multi-agent envs: which policy acts for each agent (:mod:`neuroplug.envs.multi_agent.
    mapping`). ``shared``: one policy for every agent (its observation padded to the
    longest agent's, with a one-hot of the agent's role where roles differ); ``per_team``:
    one per role (``adversary_0``'s is ``adversary``); ``per_agent``: one per agent; or
    agent or role names mapped to policy names (``{adversary: chasers, agent_0: runner}``).
    Learners that act by actor-critic (``ppo``, ``appo``) train one policy per name; an
    evolution algorithm evolves a population per name, coevolving
    (:mod:`neuroplug.evolution.policy_populations`)."""
    family: str = "auto"
    """``auto``, or the task's family (``atari``, ``vizdoom``, ``mujoco``, ``dm_control``,
    ``classic``, ``gymnasium``, or one a package registers: :mod:`neuroplug.envs.families`).
    For EnvPool tasks naming it only spares a start-up the registration of EnvPool's other
    families (the family is always the task's own); a gymnasium env takes the family named."""
    max_episode_steps: int | None = None
    """Cap on agent steps per episode (Atari: frames / frame_skip); null: the env's default."""
    solved_return: float | None = None
    """Mean evaluation return that counts as solved; null: the env's reward threshold."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra keyword arguments for ``envpool.make`` (e.g. ``repeat_action_probability``), or
    for a gymnasium env's constructor (``env.kwargs.size=8``: any key, no ``+``)."""
    imports: list[str] = field(default_factory=list)
    """Gymnasium envs only: modules imported before the env is made, in this process and in
    every worker, for packages that register their envs with gymnasium when imported
    (``env.imports=[minigrid]``; ``env.id=minigrid:MiniGrid-Empty-5x5-v0`` does the same
    for the id's own module, as ``gymnasium.make`` does)."""
    wrappers: list[Any] = field(default_factory=list)
    """Gymnasium envs only: wrappers applied to each env in order, each ``module:Class``
    (``minigrid.wrappers:ImgObsWrapper``) or ``{entry_point: module:Class, kwargs: {...}}``;
    the observations and actions neuroplug checks are the wrapped env's."""
    vectorization: str = "auto"
    """Gymnasium envs and PettingZoo's worlds: ``in_process`` (stepped one after the other
    here), ``processes`` (in ``workers`` worker processes, whole worlds to each) or ``auto``
    (processes when a pool's batch of steps costs more than
    :data:`neuroplug.envs.gymnasium_spec.PROCESS_BATCH_SECONDS` and there is more than one
    core). A world whose engines run apart (ViZDoom's multiplayer) steps here."""
    workers: int = 0
    """Worker processes for ``vectorization: processes``; 0: one per core."""
    measurements: dict[str, Any] = field(default_factory=dict)
    """EnvPool tasks of frames only: info entries read beside the frames, each with its
    ``[low, high]`` (``{HEALTH: [0, 200], AMMO2: [0, 200]}``: Doom's game variables, the
    inputs Sample Factory's Doom agents read beside the screen), packed below the pixels as
    a ``Dict`` observation's numbers are (:mod:`neuroplug.envs.measurements`) and joined to
    the Nature CNN's first linear layer. Gymnasium and PettingZoo envs give theirs in their
    observation."""
    observation_mask: list[int] = field(default_factory=list)
    """Entries of a vector observation the agent does not see (removed before the
    network): ``[1, 3]`` hides CartPole's velocities, a task that then needs memory
    (``net.core=gru``)."""

    def check(self) -> None:
        super().check()
        given = [
            name for name in ("task_id", "id", "entry_point", "parallel_env") if getattr(self, name)
        ]
        require(
            len(given) == 1,
            "env.task_id" if not given else f"env.{given[-1]}",
            "no environment given" if not given else f"{' and '.join(given)} are set together",
            "one of env.task_id (an EnvPool task), env.id (a gymnasium id), "
            "env.entry_point (package.module:Class) or env.parallel_env (a PettingZoo "
            "parallel env's package.module:function)",
        )
        mapping = self.policy_mapping
        named = isinstance(mapping, str) and mapping in POLICY_MAPPINGS
        given = isinstance(mapping, Mapping) and bool(mapping)
        require(
            named
            or (
                given
                and all(
                    isinstance(key, str) and isinstance(value, str) and key and value
                    for key, value in mapping.items()
                )
            ),
            "env.policy_mapping",
            f"got {mapping!r}",
            ", ".join(POLICY_MAPPINGS) + ", or agent or role names mapped to policy names "
            "({adversary: chasers, agent_0: runner})",
        )
        require(
            self.max_episode_steps is None or self.max_episode_steps >= 1,
            "env.max_episode_steps",
            f"got {self.max_episode_steps}",
            "null or an integer >= 1",
        )
        require(
            self.vectorization in VECTORIZATIONS,
            "env.vectorization",
            f"got {self.vectorization!r}",
            ", ".join(VECTORIZATIONS),
        )
        require(self.workers >= 0, "env.workers", f"got {self.workers}", "0 (one per core) or more")
        gymnasium_only = [name for name in ("imports", "wrappers") if getattr(self, name)]
        require(
            not gymnasium_only or bool(self.id or self.entry_point),
            f"env.{gymnasium_only[0] if gymnasium_only else 'imports'}",
            "applies to gymnasium envs, and this env is an EnvPool task (env.task_id)",
            "env.id or env.entry_point (env=gymnasium)",
        )
        for index, module in enumerate(self.imports):
            require(
                isinstance(module, str) and all(p.isidentifier() for p in module.split(".")),
                f"env.imports[{index}]",
                f"got {module!r}",
                "a module name (package.module)",
            )
        for index, wrapper in enumerate(self.wrappers):
            wrapper_entry(wrapper, f"env.wrappers[{index}]")
        require(
            not self.measurements or bool(self.task_id),
            "env.measurements",
            "reads an EnvPool task's info entries, and this env is not an EnvPool task",
            "a Dict observation of an image and numbers (gymnasium, PettingZoo), or env.task_id",
        )
        for key, bounds in self.measurements.items():
            require(
                _is_range(bounds),
                f"env.measurements.{key}",
                f"got {bounds!r}",
                "[low, high]: two finite numbers, low < high",
            )
        mask = list(self.observation_mask)
        require(
            all(int(entry) >= 0 for entry in mask) and len(set(mask)) == len(mask),
            "env.observation_mask",
            f"got {mask}",
            "distinct entry indices >= 0",
        )


def _is_range(bounds: Any) -> bool:
    """Whether ``bounds`` is ``[low, high]``: two finite numbers, low below high."""
    if isinstance(bounds, (str, bytes, Mapping)) or not isinstance(bounds, Sequence):
        return False
    numbers = [
        value for value in bounds if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    return (
        len(bounds) == 2
        and len(numbers) == 2
        and all(math.isfinite(value) for value in numbers)
        and numbers[0] < numbers[1]
    )


def wrapper_entry(wrapper: Any, field: str) -> tuple[str, dict[str, Any]]:
    """``(module:Class, kwargs)`` of one ``env.wrappers`` entry (a string, or a dict with
    ``entry_point`` and optional ``kwargs``); ConfigError naming ``field`` otherwise."""
    allowed = "module:Class, or {entry_point: module:Class, kwargs: {...}}"
    if isinstance(wrapper, str):
        entry, kwargs = wrapper, {}
    elif isinstance(wrapper, Mapping) and set(wrapper) <= {"entry_point", "kwargs"}:
        entry, kwargs = wrapper.get("entry_point"), wrapper.get("kwargs") or {}
    else:
        raise ConfigError(field, f"got {wrapper!r}", allowed)
    module, colon, name = str(entry).partition(":")
    require(
        isinstance(entry, str) and bool(colon and module and name) and isinstance(kwargs, Mapping),
        field,
        f"got {wrapper!r}",
        allowed,
    )
    return entry, dict(kwargs)


@dataclass
class NetConfig(CheckedConfig):
    """The policy network; ``type: auto`` picks an MLP or the Nature CNN from the obs."""

    type: str = "auto"
    """``auto`` (the env family's choice), ``mlp``, ``nature_cnn``, or any network a package
    registers (``python -m neuroplug --list-plugins``; :mod:`neuroplug.experiment.network_choice`)."""
    kwargs: dict[str, Any] = field(default_factory=dict)
    """A network's own settings (``net.kwargs.channels=[16,32,32]``: any key, no ``+``),
    checked against the network's config class; the built-in networks take none, and
    ``net.type=module`` passes them to the module's constructor."""
    module: str | None = None
    """``net.type=module``: ``package.module:Class`` of a ``torch.nn.Module`` built as
    ``Class(observation_shape, outputs, **net.kwargs)`` (:mod:`neuroplug.nets.module_network`)."""
    features: int = 0
    """``net.type=module``: 0, the module is the whole policy (``Class(observation_shape,
    outputs)``); N > 0, the module is an *encoder* ``Class(observation_shape, N)`` whose N
    features feed neuroplug's heads: a linear output layer, and a learner's value head on
    the same features (a shared trunk). A recurrent module (one with a ``state_size``) is
    an encoder."""
    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256])
    """MLP hidden layer widths."""
    activation: str | None = None
    """MLP hidden activation (one of :data:`neuroplug.nets.layers.ACTIVATIONS`); null: the
    algorithm's reference implementation's (its config's ``hidden_activation``): ReLU for
    ``td3`` and ``sac`` as CleanRL's scripts and their papers, tanh for the rest. A network
    built outside a run, with no algorithm to ask, takes tanh."""
    init: str | None = None
    """How an MLP's linear layers start: ``normc`` (OpenAI ES's: each unit's weights a
    Gaussian vector of norm 1, the output layer's of norm 0.01, biases zero) or ``uniform``
    (``torch.nn.Linear``'s default: weights and biases uniform in +-1/sqrt(fan_in), what
    CleanRL's SAC and TD3 scripts start from); null: the algorithm's (its config's
    ``initialization``): ``uniform`` for ``sac``, ``normc`` for the rest (``td3`` learned
    Pendulum slower from ``uniform``: docs/learners/td3-sac.md). A network built outside a
    run takes ``normc``."""
    padding: str = "valid"
    """Nature CNN padding: ``valid`` (~1.7M params) or ``same`` (~4M, the deep GA's large net)."""
    core: str = "none"
    """A recurrent core between the encoder and the output layer: ``none``, ``gru``
    (Sample Factory's default policy), ``lstm`` (CleanRL's ``ppo_atari_lstm.py``) or a
    core a package registers under ``neuroplug.cores``. Each episode's state starts at zero
    and is carried from step to step."""
    core_size: int | None = None
    """The core's width H; null: the encoder's output width."""
    vbn: bool | None = None
    """Virtual batch norm (Salimans et al. 2016, 2017): every hidden layer's output
    normalized by the statistics of a fixed reference batch of observations, computed with
    each member's own weights (:mod:`neuroplug.nets.virtual_batch_norm`). Null: on where
    the algorithm's paper used it (``es`` and the novelty ES family on Atari, as OpenAI's
    ES did), off otherwise; the start-up line says which. Evolution only."""
    vbn_reference_size: int = 128
    """Observations in the reference batch, collected once at the start of the run with
    random actions (:mod:`neuroplug.envs.reference_batch`); each member's statistics cost
    this many forwards per generation."""

    def check(self) -> None:
        super().check()
        require(
            all(int(width) >= 1 for width in self.hidden_sizes),
            "net.hidden_sizes",
            f"got {list(self.hidden_sizes)}",
            "a list of positive integers",
        )
        require(
            self.activation is None or self.activation in ACTIVATIONS,
            "net.activation",
            f"got {self.activation!r}",
            ", ".join(["null (the algorithm's)", *ACTIVATIONS]),
        )
        require(
            self.features >= 0,
            "net.features",
            f"got {self.features}",
            "0 (the module is the whole policy) or the width of its encoder's features",
        )
        require(
            self.init is None or self.init in INITIALIZATIONS,
            "net.init",
            f"got {self.init!r}",
            ", ".join(["null (the algorithm's)", *INITIALIZATIONS]),
        )
        require(
            self.padding in ("valid", "same"), "net.padding", f"got {self.padding!r}", "valid, same"
        )
        require(
            self.vbn_reference_size >= 2,
            "net.vbn_reference_size",
            f"got {self.vbn_reference_size}",
            "an integer >= 2 (a variance needs two observations)",
        )


def names_a_bot(name: str) -> bool:
    """Whether ``name`` names a scripted bot: ``random`` or ``package.module:function`` (a
    path that exists, a colon in it or not, is a run's place)."""
    if name == "random":
        return True
    return ":" in name and all(name.partition(":")[::2]) and not Path(name).exists()


OPPONENT_SAMPLINGS = ("uniform", "pfsp")
"""How self-play draws an opponent other than the learner itself (``selfplay.sampling``)."""


@dataclass
class SelfPlayConfig(CheckedConfig):
    """Self-play on a multi-agent env (``selfplay=pool``): the learner plays some agents of
    each world, an opponent drawn per game from a pool the others: the learner itself, its
    frozen past snapshots, or scripted bots, all acting in the learner's batched forward
    (:mod:`neuroplug.rl.self_play`). An opponent is swapped only when its world's game
    ends, with its recurrent state reset. For the evolution family (coevolution,
    :mod:`neuroplug.evolution.coevolution`) "the learner itself" is another member of the
    population, the snapshots are its hall of fame (the deployed policy's, taken every
    ``snapshot_interval`` generations), and bots are refused. With a policy per team or
    agent (``env.policy_mapping``) each policy has a hall of fame of its own past selves
    (:mod:`neuroplug.rl.self_play.team_league`, :mod:`neuroplug.evolution.policy_arena`):
    a game is live, or one policy's against the others' halls."""

    enabled: bool = False
    """On with ``selfplay=pool``; off (``selfplay=none``), every agent is the learner's."""
    learner_agents: list[str] = field(default_factory=list)
    """The agents (names or roles) the learner plays in every game, the opponent the rest
    (a team game: ``[adversary]``); empty: a symmetric game, where the learner plays one
    agent drawn per game and the opponent every other."""
    pool_size: int = 8
    """Frozen past snapshots kept (the oldest dropped first); bots are kept besides."""
    snapshot_interval: int = 1
    """Segments (generations, for evolution) between snapshots of the learner added to the
    pool."""
    latest_share: float = 0.5
    """Share of games the learner plays against itself, as it is now (those games' other
    agents learn too); the rest against a frozen snapshot, a bot or another member (who
    learns from them with ``members_learn``)."""
    sampling: str = "pfsp"
    """How an opponent other than the learner itself is drawn: ``uniform``, or ``pfsp``
    (AlphaStar's prioritised fictitious self-play: weight ``(1 - P(win))^pfsp_power``, the
    opponents the learner beats least played most)."""
    pfsp_power: float = 2.0
    """The exponent of ``pfsp``'s weighting (AlphaStar's f_hard)."""
    bots: list[str] = field(default_factory=list)
    """Scripted opponents kept in the pool: ``random`` (uniform actions) or
    ``package.module:function`` taking a batch of observations (one per agent the bot
    plays, as the learner sees them) and returning their actions."""
    members: bool = False
    """``algo=pbt``: every other member of the population joins each member's pool, playing
    with its live weights in the same forward, drawn as the snapshots and bots are
    (Sample Factory's ``pbt_mix_policies_in_one_env``)."""
    members_learn: bool = False
    """With ``selfplay.members``: a member learns from the agents it plays in another
    member's league too, as Sample Factory's policies learn from every agent they play (its
    own live weights acted there: on-policy steps); false: each learns only from its own
    envs' agents (the default: on pong_duel it did not help, ``benchmarks/results/
    members_learn``)."""
    eval_opponent: str | None = None
    """A bot (``random`` or ``package.module:function``) or another run of the same game
    (its output dir, or a policy file: its deployed policy, acting greedily) the run's
    evaluations play the deployed policy against: ``run.eval_episodes`` games, seats
    alternating (or the learner's agents), the learner's mean score as ``eval_return_mean``
    and its score rate as ``eval/win_rate`` with Wilson's 95% interval
    (``eval/win_rate_low``, ``_high``); with a policy per team or agent, each policy on its
    own agents (``eval/<name>/win_rate``).
    Taken with or without the pool (``selfplay=none selfplay.eval_opponent=...``). Null: an
    evaluation plays the deployed policy on every agent (a mirror match)."""

    def check(self) -> None:
        super().check()
        require(
            self.pool_size >= 0, "selfplay.pool_size", f"got {self.pool_size}", "an integer >= 0"
        )
        require(
            self.snapshot_interval >= 1,
            "selfplay.snapshot_interval",
            f"got {self.snapshot_interval}",
            "an integer >= 1 (segments)",
        )
        require(
            0.0 <= self.latest_share <= 1.0,
            "selfplay.latest_share",
            f"got {self.latest_share}",
            "a share in [0, 1]",
        )
        require(
            self.sampling in OPPONENT_SAMPLINGS,
            "selfplay.sampling",
            f"got {self.sampling!r}",
            ", ".join(OPPONENT_SAMPLINGS),
        )
        require(
            self.pfsp_power >= 0, "selfplay.pfsp_power", f"got {self.pfsp_power}", "a number >= 0"
        )
        for bot in self.bots:
            require(
                names_a_bot(bot),
                "selfplay.bots",
                f"got {bot!r}",
                "random, or package.module:function",
            )
        if self.eval_opponent:
            require(
                names_a_bot(self.eval_opponent) or Path(self.eval_opponent).exists(),
                "selfplay.eval_opponent",
                f"got {self.eval_opponent!r}, neither a bot nor a path that exists",
                "random, package.module:function, or a run's output dir (or policy file)",
            )
        require(
            self.members or not self.members_learn,
            "selfplay.members_learn",
            "true has a member learn from its games in other members' leagues, and no member "
            "plays there (selfplay.members=false)",
            "selfplay.members=true with it, or selfplay.members_learn=false",
        )
        if self.enabled:
            require(
                self.latest_share == 1.0 or self.pool_size > 0 or self.bots or self.members,
                "selfplay.latest_share",
                f"{self.latest_share} leaves games to other opponents, and the pool holds "
                "none (selfplay.pool_size=0, no selfplay.bots, selfplay.members=false)",
                "selfplay.pool_size >= 1, a bot in selfplay.bots, selfplay.members=true, or "
                "selfplay.latest_share=1",
            )


@dataclass
class LoggerConfig(CheckedConfig):
    """Where metrics go; several kinds can run together."""

    kinds: list[str] = field(default_factory=lambda: ["console", "wandb"])
    """Any of ``console`` (progress lines), ``wandb``, ``none``; ``csv`` is accepted and adds
    nothing: every run writes ``metrics.csv`` in its run dir, whatever loggers are chosen."""
    project: str = "neuroplug"
    """W&B project."""
    entity: str | None = None
    """W&B entity (user or team); null: your default."""
    mode: str | None = None
    """W&B mode: ``online``, ``offline``, ``disabled``; null: $WANDB_MODE, else online when
    logged in (WANDB_API_KEY or ~/.netrc), else offline."""
    group: str | None = None
    """W&B group; null: the sweep's name in multirun, none for single runs."""
    log_artifacts: bool = True
    """Upload the final checkpoint and the best policy as W&B artifacts."""
    init_timeout: float = 30.0
    """Seconds to wait for W&B to start online before falling back to offline."""

    def check(self) -> None:
        super().check()
        for kind in self.kinds:
            require(
                kind in LOGGER_KINDS,
                "logger.kinds",
                f"unknown logger {kind!r}",
                ", ".join(LOGGER_KINDS),
            )
        require(
            self.mode is None or self.mode in WANDB_MODES,
            "logger.mode",
            f"got {self.mode!r}",
            "null, " + ", ".join(WANDB_MODES),
        )
