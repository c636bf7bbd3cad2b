"""Which network ``net.type`` names, and building it for an env.

Networks are plugins like the other kinds: a ``Network`` subclass registered under the
``neuroplug.networks`` entry-point group (neuroplug's own ``mlp`` and ``nature_cnn`` are
registered there too, in its ``pyproject.toml``), listed by ``--list-plugins``, selected by
``net.type=<name>``. A network's settings beyond the shared ones (``net.hidden_sizes``,
``net.core``, ...) go under ``net.kwargs``, checked against its ``config_class`` (named by
a ``neuroplug.network_configs`` entry point too, so a bad value is answered before torch is
imported). ``net.type=auto`` lets the env's family choose.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from neuroplug import registry
from neuroplug.config.schema import NetConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.errors import ConfigError, PluginError
from neuroplug.nets.nature_cnn_geometry import fits_nature_cnn

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec
    from neuroplug.nets.network import Network

KIND = registry.NETWORKS.name


def network_names() -> list[str]:
    """Every installed network's ``net.type`` name (from metadata: nothing is imported)."""
    return sorted(registry.discover(KIND))


def chosen_type(config: NetConfig, env: EnvSpec) -> str:
    """The network ``config`` asks for: ``net.type``, or for ``auto`` the env family's
    choice (an image too small for the Nature CNN, MiniGrid's 7x7 view, is read by an MLP,
    flattened, as a vector observation is)."""
    if config.type != "auto":
        return config.type
    return env.family.default_network(
        env.is_image and fits_nature_cnn(env.obs_shape, config.padding)
    )


def _check_network_name(name: str) -> None:
    """Refuse a ``net.type`` no installed network plugin has, listing those there are."""
    names = network_names()
    if name not in names:
        raise ConfigError("net.type", f"got {name!r}", ", ".join(["auto", *names]))


def network_class(name: str) -> type[Network]:
    """The network plugin called ``name``; a ConfigError naming ``net.type`` lists the
    installed ones, a PluginError names the distribution of one that fails to load."""
    _check_network_name(name)
    return registry.load(KIND, name)


def check_network_settings(config: NetConfig) -> None:
    """The names in ``config`` (``net.type``, ``net.core``) against the installed plugins,
    and ``net.kwargs`` against the chosen network's config class, from its config entry
    point where it declares one (torch-free: checked before anything is built)."""
    cores = sorted(registry.discover("cores"))  # entry-point metadata: imports no core
    if config.core != "none" and config.core not in cores:
        raise ConfigError("net.core", f"got {config.core!r}", ", ".join(["none", *cores]))
    if config.type == "auto":
        return  # the env decides
    _check_network_name(config.type)
    if not registry.declares_config_entry_point(KIND, config.type):
        return  # checked when the network is built (its class holds its config class)
    try:
        settings_class = registry.load_config_class(KIND, config.type)
    except PluginError:
        return  # loading the network reports it, naming its distribution
    _checked_settings(config, settings_class)


def build_network(config: NetConfig, env: EnvSpec) -> Network:
    """The network ``config`` asks for, checked against ``env``'s observation space."""
    name = chosen_type(config, env)
    cls = network_class(name)
    settings = _checked_settings(dataclasses.replace(config, type=name), cls.config_class)
    if settings.features and not cls.reads_features:
        raise ConfigError(
            "net.features",
            f"got {settings.features}; it sizes a module encoder's features, and "
            f"net.type={name} has its own widths",
            "0, or net.type=module",
        )
    if env.measurements and not cls.reads_measurements:
        raise ConfigError(
            "net.type",
            f"{env.task_id} observes {env.measurements} measurements beside its frames, and "
            f"net.type={name} would read them as pixels",
            "nature_cnn or auto",
        )
    return cls.from_config(settings, env)


def _checked_settings(config: NetConfig, settings_class: type | None) -> NetConfig:
    """``config`` with ``net.kwargs`` checked by ``settings_class`` (a dataclass; its
    defaults filled in), or refused when the network reads none; ``dict``: any keys, the
    network checks them itself (``net.type=module``: its constructor's arguments)."""
    if settings_class is dict:
        return config
    if settings_class is None:
        if config.kwargs:
            raise ConfigError(
                f"net.kwargs.{next(iter(config.kwargs))}",
                f"net.type={config.type} takes no settings of its own",
                "the net settings it reads (net.hidden_sizes, net.core, ...)",
            )
        return config
    checked = to_dataclass(settings_class, dict(config.kwargs), "net.kwargs")
    return dataclasses.replace(config, kwargs=dataclasses.asdict(checked))
