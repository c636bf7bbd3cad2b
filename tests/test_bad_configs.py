"""Bad configurations and command lines, each run as ``python -m neuroplug <overrides>``.

Every case must fail before training starts (no ``gen`` progress line, no ``checkpoints/``
dir, no run dir left behind), exit with status 2, never show a traceback, and say so in one
paragraph that starts with ``neuroplug: error: <the offending field>`` and says what is
allowed: neuroplug's own validation, values of the wrong type, and names that do not exist
(options, groups, settings), which Hydra would otherwise report in several lines. The
subprocesses run once, two at a time, in a module fixture; each case's test reads its
result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import pytest

TIMEOUT_S = 120
"""Per case; a case that starts training instead of failing is killed after this long."""


@dataclass(frozen=True)
class Case:
    overrides: tuple[str, ...]
    """Command-line overrides; ``{tmp}`` becomes the case's own scratch dir."""
    field: str
    """What stderr must name: the offending field (or, for unknown options, group/option)."""
    also: tuple[str, ...] = ()
    """Further text stderr must contain."""
    allowed: bool = True
    """Whether our message must carry ``(allowed: ...)``."""
    plugin: str | None = None
    """An algorithm plugin the case needs (skipped when it is not installed)."""
    needs_no_gpu: bool = False
    """Only meaningful where no GPU is visible (skipped otherwise)."""


def case(*overrides: str, field: str, **options) -> Case:
    return Case(tuple(overrides), field, **options)


CASES = {
    # --- unknown group options: one line, the options there are, the closest one
    "unknown-algo": case("algo=nope", field="algo=nope", also=("es, ga",)),
    "unknown-algo-typo": case("algo=ess", field="algo=ess", also=("did you mean algo=es?",)),
    "unknown-env": case("env=nope", field="env=nope", also=("cartpole",)),
    "unknown-net": case("net=nope", field="net=nope", also=("nature_cnn",)),
    "unknown-backend": case("backend=nope", field="backend=nope", also=("torch",)),
    "unknown-scheduler": case("scheduler=nope", field="scheduler=nope"),
    "optional-group-without-plus": case(
        "experiment=ppo_cartpole",
        field="experiment=ppo_cartpole",
        also=("did you mean +experiment=ppo_cartpole?",),
        allowed=False,
    ),
    "unknown-logger": case("logger=nope", field="logger=nope", also=("console",)),
    # --- overrides the shell cut at a space (Hydra cannot parse the pieces)
    "list-split-by-the-shell": case(
        "net.hidden_sizes=[64,", "64]", field="net.hidden_sizes", also=("net.hidden_sizes=[64,64]",)
    ),
    "sweep-split-by-the-shell": case("-m", "algo=ga,", "es", field="algo", also=("algo=ga,es",)),
    # --- wrong types (found by Hydra/OmegaConf against the schemas, reported by neuroplug)
    "sigma-not-a-float": case("algo.sigma=abc", field="algo.sigma", also=("a number",)),
    "seed-not-an-int": case("run.seed=1.5", field="run.seed", also=("an integer",)),
    "population-not-an-int": case("algo.population_size=many", field="algo.population_size"),
    "mirrored-not-a-bool": case("algo.mirrored=maybe", field="algo.mirrored"),
    "hidden-sizes-not-a-list": case(
        "net.hidden_sizes=wide", field="net.hidden_sizes", also=("a list of integers",)
    ),
    "ppo-gamma-not-a-float": case("algo=ppo", "algo.gamma=high", field="algo.gamma"),
    # --- unknown fields (Hydra)
    "unknown-algo-field": case("algo.not_a_field=1", field="algo.not_a_field"),
    "british-spelling": case(
        "algo=ns_es",
        "algo.behaviour=auto",
        field="algo.behaviour",
        also=("did you mean algo.behavior=auto?",),
    ),
    # --- missing values
    "envpool-without-task-id": case(
        "env=envpool", field="env.task_id", also=("no environment given",)
    ),
    "gymnasium-without-id": case("env=gymnasium", field="env.task_id", also=("env.entry_point",)),
    "gymnasium-unknown-id": case(
        "env=gymnasium", "env.id=CartPol-v1", field="env.id", also=("Did you mean",)
    ),
    # --- impossible combinations
    "unknown-net-type": case(
        "env=cartpole", "net.type=resnet", field="net.type", also=("mlp", "nature_cnn")
    ),
    "cnn-on-vector-obs": case("env=cartpole", "net=nature_cnn", field="net.type"),
    "mlp-on-frames": case("env=pong", "net=mlp", field="net.type"),
    "ga-truncation-above-population": case(
        "algo=ga", "algo.population_size=10", "algo.truncation=20", field="algo.truncation"
    ),
    "ga-truncation-equals-population": case(
        "algo=ga", "algo.population_size=10", "algo.truncation=10", field="algo.truncation"
    ),
    "ns-es-ram-on-cartpole": case(
        "algo=ns_es", "env=cartpole", "algo.behavior=final_ram", field="algo.behavior"
    ),
    "ns-es-position-on-cartpole": case(
        "algo=ns_es", "env=cartpole", "algo.behavior=final_position", field="algo.behavior"
    ),
    "odd-mirrored-population": case(
        "algo.population_size=9", field="algo.population_size", also=("even",)
    ),
    # --- budgets and episode counts
    "zero-generations": case("run.max_generations=0", field="run.max_generations"),
    "learner-counts-segments": case(
        "algo=ppo",
        "run.max_generations=3",
        field="run.max_generations",
        also=("run.max_segments=3",),
    ),
    "evolution-counts-generations": case(
        "algo=es", "run.max_segments=3", field="run.max_segments", also=("run.max_generations=3",)
    ),
    "zero-frames": case("run.max_frames=0", field="run.max_frames"),
    "negative-episodes-per-member": case(
        "algo.episodes_per_member=-1", field="algo.episodes_per_member"
    ),
    "negative-eval-episodes": case("run.eval_episodes=-3", field="run.eval_episodes"),
    "unknown-matmul-precision": case(
        "run.matmul_precision=low", field="run.matmul_precision", also=("highest, high, medium",)
    ),
    "ga-zero-elite-episodes": case("algo=ga", "algo.elite_episodes=0", field="algo.elite_episodes"),
    "zero-checkpoint-interval": case("run.checkpoint_interval=0", field="run.checkpoint_interval"),
    "output-dir-not-writable": case(
        "run.output_dir=/dev/null/run",  # below a file: fails for root too
        field="run.output_dir",
        also=("cannot write the run dir",),
    ),
    "resume-missing-run": case(
        "run.resume={tmp}/no_such_run",
        field="run.resume",
        also=("no usable checkpoint",),
        allowed=False,  # says "point run.resume at a run's output dir" instead
    ),
    # --- sigma
    "es-negative-sigma": case("algo=es", "algo.sigma=-0.1", field="algo.sigma"),
    "es-zero-sigma": case("algo=es", "algo.sigma=0", field="algo.sigma"),
    "ga-zero-sigma": case("algo=ga", "algo.sigma=0", field="algo.sigma"),
    "ns-es-negative-sigma": case("algo=ns_es", "algo.sigma=-0.02", field="algo.sigma"),
    # --- algorithm fields out of range
    "unknown-fitness-shaping": case("algo.fitness_shaping=softmax", field="algo.fitness_shaping"),
    "multi-agent-envs-not-whole-worlds": case(
        "algo=ppo",
        "env=simple_spread",
        "algo.num_envs=8",
        field="algo.num_envs",
        also=("3 agents", "a multiple of 3"),
    ),  # fmt: skip
    "multi-agent-unknown-mapping": case(
        "algo=ppo",
        "env=simple_spread",
        "env.policy_mapping=per_role",
        field="env.policy_mapping",
        also=("shared, per_team, per_agent",),
    ),  # fmt: skip
    "multi-agent-mapping-leaves-an-agent-out": case(
        "algo=ppo",
        "env=simple_tag",
        "env.policy_mapping={adversary:chasers}",
        field="env.policy_mapping",
        also=("agent_0 has no policy", "agent: <policy>"),
    ),  # fmt: skip
    "multi-agent-mapping-one-agent-env": case(
        "algo=ppo",
        "env=cartpole",
        "env.policy_mapping=per_agent",
        field="env.policy_mapping",
        also=("one agent",),
    ),  # fmt: skip
    "multi-agent-mapping-team": case(
        "algo=ga",
        "env=pong_duel",
        "env.policy_mapping=per_agent",
        "selfplay=pool",
        "selfplay.learner_agents=[paddle_0]",
        field="selfplay.learner_agents",
        also=("own agents", "[]"),
    ),  # fmt: skip
    "eval-opponent-one-agent": case(
        "algo=ppo",
        "env=cartpole",
        "selfplay.eval_opponent=random",
        field="selfplay.eval_opponent",
        also=("one agent", "multi-agent env"),
    ),  # fmt: skip
    "multi-agent-mapping-pbt-members": case(
        "algo=pbt",
        "env=simple_tag",
        "env.policy_mapping=per_team",
        "selfplay=pool",
        "selfplay.members=true",
        field="selfplay.members",
        also=("halls of fame", "selfplay.members=false"),
    ),  # fmt: skip
    "multi-agent-mapping-self-play-bots": case(
        "algo=ppo",
        "env=pong_duel",
        "env.policy_mapping=per_agent",
        "selfplay=pool",
        "selfplay.bots=[random]",
        field="selfplay.bots",
        also=("halls of fame", "selfplay.bots=[]"),
    ),  # fmt: skip
    "multi-agent-mapping-dqn": case(
        "algo=dqn",
        "env=pong_duel",
        "env.policy_mapping=per_agent",
        field="env.policy_mapping",
        also=("actor-critic", "algo=ppo"),
    ),  # fmt: skip
    "self-play-evolution-bots": case(
        "algo=es",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.bots=[random]",
        field="selfplay.bots",
        also=("hall of fame", "selfplay.bots=[]"),
    ),  # fmt: skip
    "self-play-single-agent": case(
        "algo=ppo", "env=cartpole", "selfplay=pool", field="selfplay", also=("multi-agent",)
    ),
    "self-play-dqn": case(
        "algo=dqn", "env=pong_duel", "selfplay=pool", field="selfplay", also=("algo=ppo",)
    ),
    "self-play-unknown-agent": case(
        "algo=ppo",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.learner_agents=[goalie]",
        field="selfplay.learner_agents",
        also=("paddle_0",),
    ),  # fmt: skip
    "self-play-nothing-to-play": case(
        "algo=ppo",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.pool_size=0",
        field="selfplay.latest_share",
    ),  # fmt: skip
    "self-play-members-lone-learner": case(
        "algo=ppo",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.members=true",
        field="selfplay.members",
        also=("algo=pbt",),
    ),  # fmt: skip
    "self-play-members-learn-without-members": case(
        "algo=pbt",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.members_learn=true",
        field="selfplay.members_learn",
        also=("selfplay.members=true",),
    ),  # fmt: skip
    "self-play-members-evolution": case(
        "algo=es",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.members=true",
        field="selfplay.members",
        also=("coevolution",),
    ),  # fmt: skip
    "self-play-bad-eval-opponent": case(
        "selfplay=pool", "selfplay.eval_opponent=tracker", field="selfplay.eval_opponent"
    ),
    "self-play-bad-sampling": case(
        "selfplay=pool", "selfplay.sampling=elo", field="selfplay.sampling", also=("pfsp",)
    ),
    "self-play-pool-beyond-memory": case(
        "algo=ppo",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.pool_size=100000000000",
        field="selfplay.pool_size",
        also=("GiB",),
    ),  # fmt: skip
    "es-unknown-optimizer": case(
        "algo=es", "algo.optimizer=rmsprop", field="algo.optimizer", also=("adam, sgd",)
    ),
    "rs-population-of-one": case("algo=rs", "algo.population_size=1", field="algo.population_size"),
    "ga-elite-candidates-above-population": case(
        "algo=ga",
        "algo.population_size=10",
        "algo.truncation=2",
        "algo.elite_candidates=11",
        field="algo.elite_candidates",
    ),
    "cem-zero-elite-fraction": case(
        "algo=cem", "algo.elite_fraction=0", field="algo.elite_fraction", plugin="cem"
    ),
    "cem-zero-initial-sigma": case(
        "algo=cem", "algo.initial_sigma=0", field="algo.initial_sigma", plugin="cem"
    ),
    "ns-es-zero-meta-population": case(
        "algo=ns_es", "algo.meta_population_size=0", field="algo.meta_population_size"
    ),
    "ns-es-zero-k": case("algo=ns_es", "algo.k=0", field="algo.k"),
    "nsra-es-zero-weight-delta": case(
        "algo=nsra_es", "algo.weight_delta=0", field="algo.weight_delta"
    ),
    # --- learners
    "ppo-zero-rollout": case("algo=ppo", "algo.rollout_length=0", field="algo.rollout_length"),
    "ppo-gamma-above-one": case("algo=ppo", "algo.gamma=1.5", field="algo.gamma"),
    "ppo-more-groups-than-envs": case(
        "algo=ppo", "algo.num_envs=2", "algo.env_groups=3", field="algo.env_groups"
    ),
    "ppo-minibatches-above-batch": case(
        "algo=ppo",
        "algo.num_envs=2",
        "algo.rollout_length=4",
        "algo.minibatches=9",
        field="algo.minibatches",
    ),
    "ppo-reward-clip-on-cartpole": case(
        "algo=ppo", "env=cartpole", "algo.reward_clip=true", field="algo.reward_clip"
    ),
    "ppo-device-tpu": case("algo=ppo", "algo.device=tpu", field="algo.device"),
    # --- backend and scheduler
    "device-tpu": case("backend.device=tpu", field="backend.device"),
    "device-cuda-without-gpu": case(
        "backend.device=cuda", field="backend.device", also=("GPU",), needs_no_gpu=True
    ),
    "zero-max-envs": case("scheduler.max_envs=0", field="scheduler.max_envs"),
    "negative-env-threads": case("scheduler.env_threads=-1", field="scheduler.env_threads"),
    # --- a setting of another name: the nearest one is named
    "unknown-scheduler-threads": case(
        "scheduler.num_threads=2",
        field="scheduler.num_threads",
        also=("did you mean scheduler.env_threads=2",),
    ),
    "unknown-backend-threads": case(
        "backend.num_threads=1",
        field="backend.num_threads",
        also=("did you mean backend.torch_threads=1",),
    ),
    "one-pipelined-group": case(
        "scheduler=pipelined", "scheduler.groups=1", field="scheduler.groups"
    ),
    # --- env
    "unknown-envpool-task": case(
        "env=envpool", "env.task_id=NoSuchGame-v5", field="env.task_id", also=("did you mean",)
    ),
    "reserved-env-kwarg": case("+env.kwargs.num_envs=3", field="env.kwargs", also=("num_envs",)),
    "env-kwarg-envpool-rejects": case(
        "+env.kwargs.not_a_setting=3",
        field="env.kwargs.not_a_setting",
        also=("max_episode_steps",),  # the allowed list names EnvPool's real settings
    ),
    "env-kwarg-without-plus": case(  # any key goes without "+": the env checks it
        "env.kwargs.not_a_setting=3", field="env.kwargs.not_a_setting"
    ),
    "gymnasium-wrappers-on-envpool": case("env.wrappers=[a.b:C]", field="env.wrappers"),
    "malformed-wrapper": case(
        "env=gymnasium", "env.id=CartPole-v1", "env.wrappers=[no_colon]", field="env.wrappers[0]"
    ),
    "env-kwarg-wrong-type": case(
        "env=pong",
        "+env.kwargs.repeat_action_probability=banana",
        field="env.kwargs",
        also=("repeat_action_probability='banana'",),
    ),
    # --- net
    "zero-hidden-size": case("net.hidden_sizes=[0]", field="net.hidden_sizes"),
    "unknown-activation": case("net.activation=swish", field="net.activation"),
    "unknown-padding": case("net.padding=full", field="net.padding"),
    "unknown-core": case("net.core=lstmm", field="net.core"),
    "another-strategys-setting": case(
        "algo=snes",
        "algo.c_c=0.1",
        field="algo.c_c",
        also=("a setting of algo=cma_es, sep_cma_es",),
    ),
    "full-covariance-population-too-small": case(
        "algo=cma_es", "algo.population_size=3", field="algo.population_size", also=("4",)
    ),
    "off-policy-learner-on-discrete-actions": case(
        "algo=sac", "env=cartpole", field="algo", also=("algo=dqn, ppo or appo",)
    ),
    "features-of-a-table-network": case("net.features=64", field="net.features", also=("module",)),
    "core-with-a-learner": case("algo=dqn", "net.core=gru", field="net.core", also=("ppo",)),
    "core-on-triton": case("backend=triton", "net.core=gru", field="net.core"),
    "core-in-a-population-of-dqn": case(
        "algo=pbt", "algo.learner=dqn", "net.core=gru", field="net.core", also=("ppo, appo",)
    ),
    "recurrence-not-dividing-the-rollout": case(
        "algo=ppo", "algo.rollout_length=32", "algo.recurrence=5", field="algo.recurrence"
    ),
    "vbn-with-a-learner": case("algo=ppo", "net.vbn=true", field="net.vbn", also=("false",)),
    "vbn-with-obs-norm": case("net.vbn=true", field="net.vbn", also=("algo.obs_norm=false",)),
    "vbn-on-triton": case("env=pong", "backend=triton", "net.vbn=true", field="net.vbn"),
    "vbn-reference-of-one": case("net.vbn_reference_size=1", field="net.vbn_reference_size"),
    "mask-of-a-missing-entry": case("env.observation_mask=[7]", field="env.observation_mask"),
    "measurements-beside-no-frames": case(
        "env.measurements={x:[0,1]}", field="env.measurements", also=("not frames",)
    ),
    "measurements-of-a-gymnasium-env": case(
        "env=gymnasium",
        "env.id=CartPole-v1",
        "env.measurements={x:[0,1]}",
        field="env.measurements",
    ),
    "measurements-range-upside-down": case(
        "env=doom_basic", "env.measurements={HEALTH:[200,0]}", field="env.measurements.HEALTH"
    ),
    "measurements-of-a-missing-entry": case(
        "env=doom_basic",
        "env.measurements={HELTH:[0,200]}",
        field="env.measurements.HELTH",
        also=("HEALTH",),
    ),
    # --- text tasks
    "text-task-unknown": case(
        "env=addition", "env.kwargs.task=adition", field="env.kwargs.task", also=("countdown",)
    ),
    "text-task-setting": case("env=addition", "env.kwargs.digts=3", field="env.kwargs"),
    "text-alphabet-short": case(
        "env=addition",
        "env.kwargs.alphabet=0123",
        field="env.kwargs.alphabet",
        also=("'456789+='",),
    ),
    "text-rank-with-nothing-to-factor": case(
        "env=sorting",
        "net.type=causal_lm",
        "algo.perturbation=lowrank",
        field="algo.lowrank_min_size",
        also=("16384 or less",),
    ),  # fmt: skip
    "causal-lm-on-cartpole": case("net.type=causal_lm", field="net.type", also=("text task",)),
    "text-episodes-beyond-memory": case(
        "env=addition",
        "net.type=causal_lm",
        "net.kwargs.d_model=1024",
        "net.kwargs.layers=24",
        "algo.population_size=4096",
        "algo.episodes_per_member=64",
        "scheduler.max_envs=262144",
        field="scheduler.max_envs",
        also=("GiB is available",),
    ),  # fmt: skip
    # --- logger
    "unknown-logger-kind": case("logger.kinds=[console,nope]", field="logger.kinds"),
    "bad-logger-mode": case("logger.mode=sometimes", field="logger.mode"),
}

XFAIL: dict[str, str] = {}
"""Cases that show a bug in neuroplug: expected to fail until it is fixed."""


@dataclass(frozen=True)
class Outcome:
    returncode: int | None
    """None: still running after TIMEOUT_S (killed)."""
    stdout: str
    stderr: str
    checkpoints: list[str]
    """``checkpoints`` dirs found anywhere under the case's scratch dir."""
    run_dir_left: bool
    """Whether the case's run dir (``hydra.run.dir``) is still there."""


def _skip_reason(item: Case) -> str | None:
    if item.plugin and item.plugin not in {
        e.name for e in entry_points(group="neuroplug.algorithms")
    }:
        return f"algorithm plugin {item.plugin!r} is not installed"
    if item.needs_no_gpu:
        import torch

        if torch.cuda.is_available():
            return "a GPU is visible"
    return None


def _run(item: Case, scratch: Path) -> Outcome:
    scratch.mkdir(parents=True)
    overrides = [override.replace("{tmp}", str(scratch)) for override in item.overrides]
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    command = [sys.executable, "-m", "neuroplug", *overrides, f"hydra.run.dir={scratch / 'run'}"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=scratch, env=env, timeout=TIMEOUT_S
        )
        returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode = None
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout
        stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) else expired.stderr
    checkpoints = [str(path) for path in scratch.rglob("checkpoints")]
    return Outcome(returncode, stdout or "", stderr or "", checkpoints, (scratch / "run").exists())


@pytest.fixture(scope="module")
def outcomes(request, tmp_path_factory) -> dict[str, Outcome]:
    """Every selected, runnable case's outcome, run two at a time."""
    selected: set[str] = set()
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module is request.module and callspec is not None and "name" in callspec.params:
            selected.add(callspec.params["name"])
    names = [name for name in CASES if name in selected and _skip_reason(CASES[name]) is None]
    root = tmp_path_factory.mktemp("bad_configs")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_run, CASES[name], root / name) for name in names}
        return {name: future.result() for name, future in futures.items()}


def _check(name: str, outcome: Outcome) -> None:
    item = CASES[name]
    shown = (
        f"overrides: {' '.join(item.overrides)}\n"
        f"stdout:\n{outcome.stdout}\nstderr:\n{outcome.stderr}"
    )
    assert outcome.returncode is not None, f"still running after {TIMEOUT_S} s\n{shown}"
    assert outcome.returncode == 2, shown  # every bad input: neuroplug's one line, status 2
    # Failed before training: no generation line, no checkpoint.
    assert not any(line.startswith("gen ") for line in outcome.stdout.splitlines()), shown
    assert not outcome.checkpoints, shown
    assert not outcome.run_dir_left, f"a refused run left its run dir behind\n{shown}"
    assert "Traceback" not in outcome.stderr, shown
    assert item.field in outcome.stderr, shown
    for text in item.also:
        assert text in outcome.stderr, shown
    prefix = f"neuroplug: error: {item.field}"
    assert outcome.stderr.count("neuroplug: error:") == 1, shown
    assert prefix in outcome.stderr, shown
    message = outcome.stderr[outcome.stderr.index(prefix) :].strip()
    assert "\n\n" not in message, f"not one paragraph\n{shown}"
    if item.allowed:
        assert "(allowed: " in message, shown


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=XFAIL[name]))
        if name in XFAIL
        else name
        for name in CASES
    ],
)
def test_bad_input_fails_before_training_naming_the_field(name, outcomes):
    reason = _skip_reason(CASES[name])
    if reason:
        pytest.skip(reason)
    _check(name, outcomes[name])


def test_the_table_is_big_enough():
    assert len(CASES) >= 35
