"""A player a source names, for a run's evaluations (``selfplay.eval_opponent``) and for
``neuroplug.tools.match``: a scripted bot (``random`` or ``package.module:function``) or a
run's deployed policy (its output dir, its checkpoints folder, a shared folder or a policy
file), rebuilt from the file as :func:`neuroplug.load_policy` rebuilds it, acting greedily
through its own observation normalisation. A policy that cannot play the env (another
game, several policies, a size its config does not build) is refused in one line naming
the setting that gave it: before training, or before a match."""

from __future__ import annotations

from neuroplug.config.schema import names_a_bot
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, NeuroplugError
from neuroplug.nets.policy import Policy
from neuroplug.opponents.matches import BotPlayer, NetworkPlayer, Player
from neuroplug.training.policy_file import (
    normalizer_as_arrays,
    policy_row,
    read_policy_file,
    several_policies,
)
from neuroplug.training.policy_network import build_network
from neuroplug.training.policy_sources import policy_path

FIELD = "selfplay.eval_opponent"
"""The setting a run's evaluation opponent comes from."""


def player_of(source: str, env: EnvSpec, field: str = FIELD, policy: str | None = None) -> Player:
    """The player ``source`` names, to play ``env``'s game (see the module docstring);
    ``field``: the setting (or argument) that named it, for its errors; ``policy``: of a
    run holding a policy per team or agent, the one that plays (a policy's or an agent's
    name)."""
    if not env.agents:
        raise ConfigError(
            field,
            f"{env.task_id} has one agent, and a game against {source} needs several",
            "null, or a multi-agent env (env=pong_duel, env=simple_tag, ...)",
        )
    if names_a_bot(source):
        from neuroplug.opponents.bots import load_bot

        return BotPlayer(source, load_bot(source, env))
    try:
        record = read_policy_file(policy_path(source))
        network = build_network(record)
    except NeuroplugError as error:
        raise ConfigError(field, f"{source}: {error}", "a run of this env's game") from None
    theirs = record.env
    if (tuple(theirs["obs_shape"]), bool(theirs["discrete"]), int(theirs["num_actions"])) != (
        env.obs_shape, env.discrete, env.num_actions,
    ):  # fmt: skip
        raise ConfigError(
            field,
            f"{source} plays {theirs['task_id']} (observations {tuple(theirs['obs_shape'])}, "
            f"{theirs['num_actions']} actions), not this run's {env.task_id} (observations "
            f"{env.obs_shape}, {env.num_actions} actions)",
            "a run of the same game",
        )
    held = several_policies(record)
    if policy is not None:
        try:
            params = record.policy_params[policy_row(record, policy)].float()
        except NeuroplugError as error:
            raise ConfigError(field, f"{source}: {error}", "a policy the run holds") from None
    elif held:
        raise ConfigError(
            field,
            f"{source} holds {held}, and a game seats one policy a side",
            "one of them named (neuroplug.tools.match --policy or --opponent-policy), or a "
            "run of one policy (env.policy_mapping=shared); watch them all with "
            "neuroplug.tools.watch",
        )
    else:
        params = record.policy_params.float()
    if params.numel() != network.num_params:
        raise ConfigError(
            field,
            f"{source} holds {params.numel()} parameters, and its config builds "
            f"{network.describe()}",
            "a run's own policy file",
        )
    policy = Policy(network, env, normalize_observations=record.normalizer is not None)
    if policy.normalizer is not None:
        policy.normalizer.load_state_dict(normalizer_as_arrays(record.normalizer))
    return NetworkPlayer(source, network, params, policy)
