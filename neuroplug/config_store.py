"""Put every schema into Hydra's ConfigStore so ``algo=<name>`` works for any plugin.

A plugin's schema is stored as ``schema/<group>/<name>``; when neuroplug ships no yaml
for it, it is also stored as ``<group>/<name>``, the option a user selects. Shipped yamls
(``conf/algo/es.yaml``) start from the schema in their defaults list, so their values are
type-checked too. A plugin that fails to import is still stored (as an empty option), so
selecting it reports the import error naming its distribution instead of "not found".
"""

from __future__ import annotations

import sys

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from neuroplug import registry
from neuroplug.config.paths import conf_dir
from neuroplug.config.schema import EnvConfig, LoggerConfig, NetConfig, RunConfig
from neuroplug.errors import PluginError

CORE_SCHEMAS = {"run": RunConfig, "env": EnvConfig, "net": NetConfig, "logger": LoggerConfig}


def register_schemas(warn=None) -> None:
    """Store the core schemas and the schema of every installed plugin."""
    warn = warn or (lambda message: print(f"neuroplug: warning: {message}", file=sys.stderr))
    store = ConfigStore.instance()
    for group, schema in CORE_SCHEMAS.items():
        store.store(group="schema", name=group, node=schema)
    shipped = conf_dir()
    for kind in registry.KINDS.values():
        group = kind.config_group
        for name in registry.discover(kind.name):
            try:
                plugin = registry.load(kind.name, name)
            except PluginError as error:
                warn(str(error))
                node = OmegaConf.create({"name": name})
            else:
                node = OmegaConf.structured(plugin.config_class)
                if not issubclass(plugin.config_class, kind.config_base):
                    warn(
                        f"{kind.singular} {name!r}: its config_class does not derive from "
                        f"neuroplug.api.{kind.config_base.__name__}"
                    )
                if "name" in node:
                    node.name = name
            store.store(group=f"schema/{group}", name=name, node=node)
            if not (shipped / group / f"{name}.yaml").is_file():
                store.store(group=group, name=name, node=node)


def register_resolvers() -> None:
    """OmegaConf resolvers the shipped configs use (idempotent)."""
    if not OmegaConf.has_resolver("neuroplug.first"):
        # ${neuroplug.first:a,b}: a unless it is null, else b (oc.select only covers missing keys).
        OmegaConf.register_new_resolver(
            "neuroplug.first", lambda value, default: default if value is None else value
        )
