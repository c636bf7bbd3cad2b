"""``selfplay.eval_opponent`` as a player for a run's evaluations: a scripted bot
(``random`` or ``package.module:function``) or another run's deployed policy (its output
dir, its checkpoints folder, a shared folder or a policy file), rebuilt from the file as
:func:`neuroplug.load_policy` rebuilds it, acting greedily through its own observation
normalisation. A policy that cannot play this run's env is refused before training, in
one line naming the setting."""

from __future__ import annotations

from pathlib import Path

from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, NeuroplugError
from neuroplug.nets.policy import Policy
from neuroplug.opponents.matches import BotPlayer, NetworkPlayer, Player
from neuroplug.training.policy_file import normalizer_as_arrays, read_policy_file
from neuroplug.training.policy_network import build_network
from neuroplug.training.policy_sources import policy_path

FIELD = "selfplay.eval_opponent"


def is_bot(source: str) -> bool:
    """Whether ``source`` names a scripted bot rather than a policy's place."""
    return source == "random" or (":" in source and not Path(source).exists())


def eval_opponent_player(source: str, env: EnvSpec) -> Player:
    """The player ``source`` names (see the module docstring)."""
    if is_bot(source):
        from neuroplug.opponents.bots import load_bot

        return BotPlayer(source, load_bot(source, env))
    try:
        record = read_policy_file(policy_path(source))
        network = build_network(record)
    except NeuroplugError as error:
        raise ConfigError(FIELD, f"{source}: {error}", "a run of this env's game") from None
    theirs = record.env
    if (tuple(theirs["obs_shape"]), bool(theirs["discrete"]), int(theirs["num_actions"])) != (
        env.obs_shape, env.discrete, env.num_actions,
    ):  # fmt: skip
        raise ConfigError(
            FIELD,
            f"{source} plays {theirs['task_id']} (observations {tuple(theirs['obs_shape'])}, "
            f"{theirs['num_actions']} actions), not this run's {env.task_id} (observations "
            f"{env.obs_shape}, {env.num_actions} actions)",
            "a run of the same game",
        )
    if record.policy_params.dim() != 1:
        raise ConfigError(
            FIELD,
            f"{source} holds a policy per team or agent",
            "a run of one policy (env.policy_mapping=shared)",
        )
    params = record.policy_params.float()
    if params.numel() != network.num_params:
        raise ConfigError(
            FIELD,
            f"{source} holds {params.numel()} parameters, and its config builds "
            f"{network.describe()}",
            "a run's own policy file",
        )
    policy = Policy(network, env, normalize_observations=record.normalizer is not None)
    if policy.normalizer is not None:
        policy.normalizer.load_state_dict(normalizer_as_arrays(record.normalizer))
    return NetworkPlayer(source, network, params, policy)
