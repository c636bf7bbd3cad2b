"""EnvPool environments: validated specs and pools seeded per episode."""

from neuroplug.envs.make import make_pool, make_spec

__all__ = ["make_pool", "make_spec"]
