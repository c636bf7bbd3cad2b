"""Choose and build the network for an environment from the ``net`` config.

The architectures are the :class:`~neuroplug.nets.network.Network` subclasses with a
``type_name`` in this package's modules: adding one is a module here, and ``net.type``
accepts its name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import neuroplug.nets
from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.nature_cnn_geometry import fits_nature_cnn
from neuroplug.nets.network import Network


@cache
def network_types() -> dict[str, type[Network]]:
    """``net.type`` name -> architecture, for every architecture in ``neuroplug.nets``."""
    for module in pkgutil.iter_modules(neuroplug.nets.__path__):
        if module.name != "build":
            importlib.import_module(f"neuroplug.nets.{module.name}")
    found: dict[str, type[Network]] = {}
    pending = list(Network.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        # Only this package's own: subclasses defined elsewhere (tests) are built in code.
        if cls.type_name and cls.__module__.startswith("neuroplug.nets."):
            found[cls.type_name] = cls
    return dict(sorted(found.items()))


def build_network(config: NetConfig, env: EnvSpec) -> Network:
    """The network ``config`` asks for, checked against ``env``'s observation space."""
    net_type = config.type
    if net_type == "auto":
        # An image too small for the Nature CNN (MiniGrid's 7x7 view) is read by an MLP,
        # flattened, as a vector observation is.
        net_type = env.family.default_network(
            env.is_image and fits_nature_cnn(env.obs_shape, config.padding)
        )
    types = network_types()
    if net_type not in types:
        raise ConfigError("net.type", f"got {net_type!r}", ", ".join(["auto", *types]))
    return types[net_type].from_config(config, env)
