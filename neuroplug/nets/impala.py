"""``net.type=impala``: the IMPALA ResNet (Espeholt et al. 2018, "IMPALA: Scalable
Distributed Deep-RL with Importance Weighted Actor-Learner Architectures", Figure 3,
the "deep" network; Sample Factory's ``resnet_impala``, CleanRL's ``ppo_procgen.py``)::

    for channels in (16, 32, 32):
        x = conv3x3(x, channels); x = maxpool3x3(x, stride 2)
        x = x + conv3x3(relu(conv3x3(relu(x))))      # two residual blocks
        x = x + conv3x3(relu(conv3x3(relu(x))))
    features = relu(linear(flatten(relu(x)), 256)); outputs = linear(features)

A module network used as an encoder (:mod:`neuroplug.nets.module_network`, ``net.features``
set to its 256 units): neuroplug adds the output layer, and a learner's value head reads the
same features (the paper's shared trunk). A population runs through ``torch.func`` over its
members, a learner trains it through autograd. Its widths are ``net.kwargs.channels`` and
``net.kwargs.hidden`` (:mod:`neuroplug.nets.impala_config`). The encoder alone is
:class:`ImpalaEncoder`, usable as ``net.type=module net.module=neuroplug.nets.impala:ImpalaEncoder
net.features=256``.
"""

from __future__ import annotations

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.impala_config import ImpalaSettings
from neuroplug.nets.module_network import ModuleNetwork


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.first = nn.Conv2d(channels, channels, 3, padding=1)
        self.second = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.second(torch.relu(self.first(torch.relu(x))))


class _Stack(nn.Module):
    """A convolution, 3x3 max-pooling of stride 2, two residual blocks."""

    def __init__(self, in_channels: int, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.blocks = nn.Sequential(_ResidualBlock(channels), _ResidualBlock(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.pool(self.conv(x)))


class ImpalaEncoder(nn.Module):
    """The ResNet up to its features, as a ``torch.nn.Module``: frames ``(b, C, H, W)`` in,
    ``(b, features)`` out (the rectified fully connected layer)."""

    def __init__(self, observation_shape, features: int = 256, channels=(16, 32, 32)) -> None:
        super().__init__()
        stacks, depth = [], observation_shape[0]
        height, width = observation_shape[1:]
        for width_out in channels:
            stacks.append(_Stack(depth, int(width_out)))
            depth = int(width_out)
            height, width = (height + 1) // 2, (width + 1) // 2
        self.stacks = nn.Sequential(*stacks)
        self.hidden = nn.Linear(depth * height * width, features)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stacks(observations)).flatten(1)
        return torch.relu(self.hidden(x))


class ImpalaResNet(ModuleNetwork):
    """The IMPALA ResNet for image observations; see the module docstring."""

    type_name = "impala"
    reads_features = False
    config_class = ImpalaSettings

    def __init__(self, input_shape, output_size: int, kwargs: dict | None = None) -> None:
        kwargs = dict(kwargs or {})
        features = int(kwargs.pop("hidden", 256))
        super().__init__(ImpalaEncoder, input_shape, output_size, kwargs, "impala", features)

    def resized(self, output_size: int) -> ImpalaResNet:
        return ImpalaResNet(
            self.input_shape, output_size, {**self.kwargs, "hidden": self.encoder_features}
        )

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> ImpalaResNet:
        if not env.is_image:
            raise ConfigError(
                "net.type",
                f"impala needs image observations (channels, height, width) but "
                f"{env.task_id} observes shape {env.obs_shape}",
                "mlp or auto for vector observations",
            )
        network = cls(env.obs_shape, env.num_actions, dict(config.kwargs))
        network.check_module("impala")
        return network

    def describe(self) -> str:
        widths = "-".join(str(width) for width in self.kwargs.get("channels", (16, 32, 32)))
        return f"IMPALA ResNet {widths} (torch.func over members), {self.num_params:,} params"
