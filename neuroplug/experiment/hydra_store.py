"""Put every schema into Hydra's ConfigStore so ``algo=<name>`` works for any plugin.

A plugin's schema is stored as ``schema/<group>/<name>`` and, when neuroplug ships no
yaml of that name, as ``<group>/<name>``, the option a user selects: its config class's
defaults are the option's values, and its docstrings their documentation. A shipped yaml
that sets values starts from a schema in its defaults list (``conf/scheduler/serial.yaml``:
``threaded`` with one thread and one group), so its values are type-checked too. A plugin
that fails to import is still stored (as an empty option), so selecting it reports the
import error naming its distribution instead of "not found".
"""

from __future__ import annotations

import sys

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from neuroplug import registry
from neuroplug.config.packages import package_options
from neuroplug.config.paths import conf_dir
from neuroplug.config.run_dir import claim_run_dir
from neuroplug.config.schema import (
    EnvConfig,
    LoggerConfig,
    NetConfig,
    RunConfig,
    SelfPlayConfig,
)
from neuroplug.errors import PluginError

CORE_SCHEMAS = {
    "run": RunConfig,
    "env": EnvConfig,
    "net": NetConfig,
    "logger": LoggerConfig,
    "selfplay": SelfPlayConfig,
}
OPEN_CORE_FIELDS = {"env": ("kwargs", "measurements"), "net": ("kwargs",)}
"""Core fields whose keys are not declared: a dict the env's constructor reads, the info
entries an env's measurements are, or the chosen network's own settings."""


def register_schemas(warn=None) -> None:
    """Store the core schemas and the schema of every installed plugin."""
    warn = warn or (lambda message: print(f"neuroplug: warning: {message}", file=sys.stderr))
    store = ConfigStore.instance()
    for group, schema in CORE_SCHEMAS.items():
        node = OmegaConf.structured(schema)
        for open_field in OPEN_CORE_FIELDS.get(group, ()):
            # Any key goes on the command line (env.kwargs.size=8, no "+"): the env's
            # constructor, or the network's config class, is the schema.
            OmegaConf.set_struct(node[open_field], False)
        store.store(group="schema", name=group, node=node)
    shipped = conf_dir()
    for kind in registry.KINDS.values():
        group = kind.config_group
        for name in registry.discover(kind.name):
            try:
                # The config entry point's light module where the plugin declares one:
                # neither the plugin nor torch is imported to check a value or print --help.
                config_class = registry.load_config_class(kind.name, name)
            except PluginError as error:
                warn(str(error))
                node = OmegaConf.create({"name": name})
            else:
                node = OmegaConf.structured(config_class)
                if not issubclass(config_class, kind.config_base):
                    warn(
                        f"{kind.singular} {name!r}: its config_class does not derive from "
                        f"neuroplug.api.{kind.config_base.__name__}"
                    )
                if "name" in node:
                    node.name = name
                for open_field in getattr(config_class, "open_fields", ()):
                    # Any key goes on the command line; the plugin checks the keys itself.
                    OmegaConf.set_struct(node[open_field], False)
            store.store(group=f"schema/{group}", name=name, node=node)
            if not (shipped / group / f"{name}.yaml").is_file():
                store.store(group=group, name=name, node=node)
    try:
        options = package_options()
    except PluginError as error:
        warn(str(error))
        options = ()
    for option in options:
        # A package's own option (env=gridworld): composed as a shipped yaml is.
        store.store(
            group=option.group,
            name=option.name,
            node=OmegaConf.load(option.path),
            provider=option.distribution,
        )


def user_config_groups() -> dict[str, list[str]]:
    """Every config group a user picks from (``algo``, ``env``, ``experiment``, ...) with its
    options: the shipped yamls and the plugins' stored options, without the internal
    ``schema`` groups and Hydra's own."""
    groups: dict[str, set[str]] = {}
    for path in conf_dir().iterdir():
        if path.is_dir():
            groups[path.name] = {option.stem for option in path.glob("*.yaml")}
    for group, entries in ConfigStore.instance().repo.items():
        if group in ("schema", "hydra") or not isinstance(entries, dict):
            continue
        names = {
            name.removesuffix(".yaml")
            for name, node in entries.items()
            if not isinstance(node, dict)
        }
        groups.setdefault(group, set()).update(names)
    return {group: sorted(options) for group, options in sorted(groups.items()) if options}


def config_groups_help() -> str:
    """The ``--help`` lines listing :func:`user_config_groups`."""
    optional = {"experiment", "sweep"}  # not in the defaults list: added with a +
    return "\n".join(
        f"{'+' if group in optional else ''}{group}: {', '.join(options)}"
        for group, options in user_config_groups().items()
    )


def register_resolvers() -> None:
    """OmegaConf resolvers the shipped configs use (idempotent)."""
    if not OmegaConf.has_resolver("neuroplug.run_dir"):
        # ${neuroplug.run_dir:explicit,default}: a run dir no other run holds. Cached, so a
        # config resolves it once and Hydra's sweep jobs (which get a copy of the cache) agree.
        OmegaConf.register_new_resolver("neuroplug.run_dir", claim_run_dir, use_cache=True)
    if not OmegaConf.has_resolver("neuroplug.config_groups"):
        # --help lists the groups a user picks from (Hydra's own list shows internal ones).
        OmegaConf.register_new_resolver("neuroplug.config_groups", config_groups_help)
