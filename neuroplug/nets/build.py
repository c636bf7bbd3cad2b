"""Choose and build the network for an environment from the ``net`` config."""

from __future__ import annotations

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.nets.network import Network


def build_network(config: NetConfig, env: EnvSpec) -> Network:
    """The network ``config`` asks for, checked against ``env``'s observation space."""
    net_type = config.type
    if net_type == "auto":
        net_type = env.family.default_network(env.is_image)
    if net_type == "nature_cnn":
        if not env.is_image:
            raise ConfigError(
                "net.type",
                f"nature_cnn needs image observations (channels, height, width) but "
                f"{env.task_id} observes shape {env.obs_shape}",
                "mlp or auto for vector observations",
            )
        try:
            return NatureCNN(env.obs_shape, env.num_actions, config.padding)
        except ValueError as error:
            raise ConfigError("net.type", str(error), "larger frames, or mlp") from error
    if env.is_image:
        raise ConfigError(
            "net.type",
            f"mlp cannot take image observations of shape {env.obs_shape} from {env.task_id}",
            "nature_cnn or auto",
        )
    if len(env.obs_shape) != 1:
        raise ConfigError(
            "net.type",
            f"mlp needs flat vector observations, {env.task_id} observes shape {env.obs_shape}",
            "tasks with 1-D observations",
        )
    return MLP(
        env.obs_shape[0],
        [int(width) for width in config.hidden_sizes],
        env.num_actions,
        config.activation,
    )
