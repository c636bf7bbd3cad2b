"""Where moved modules went: a plugin written against an older contract that imports one is
told where it went, not only that it is missing.

:class:`MovedModules` sits at the end of ``sys.meta_path`` (installed by the ``neuroplug``
package), so it sees an import only after every real finder has failed: a module that
exists is never touched.
"""

from __future__ import annotations

import sys
from importlib.abc import MetaPathFinder

MOVED: dict[str, tuple[str, int]] = {
    "neuroplug.learners": ("neuroplug.rl", 3),
    "neuroplug.algorithms": ("neuroplug.evolution", 3),
    "neuroplug.schedulers": ("neuroplug.engine", 3),
    "neuroplug.evolution.adam": ("neuroplug.adam", 3),
    "neuroplug.rl.flat_adam": ("neuroplug.adam", 3),
    "neuroplug.rl.population_acting": ("neuroplug.rl.acting", 4),
    "neuroplug.rl.presets": ("neuroplug.presets", 4),
    "neuroplug.replay": ("neuroplug.watch", 4),
    "neuroplug.nets.build": ("neuroplug.networks", 5),
    # Each plugin's config moved beside its code (the learner named by its module).
    "neuroplug_algorithms.configs": ("neuroplug_algorithms.<algorithm>_config", 5),
    "neuroplug_learners.configs": ("neuroplug_learners.<learner>_config", 5),
    "neuroplug_schedulers.configs": ("neuroplug_schedulers.<scheduler>_config", 5),
    "neuroplug_backends.configs": ("neuroplug_backends.torch_backend_config", 5),
    "neuroplug_triton.configs": ("neuroplug_triton.backend_config", 5),
    "neuroplug_ray.configs": ("neuroplug_ray.scheduler_config", 5),
}
"""Old module -> (where it went, the contract version that moved it)."""


def moved_message(name: str) -> str | None:
    """What to tell an import of ``name`` that no longer exists (None: it never moved)."""
    for old, (new, contract) in sorted(MOVED.items(), key=lambda item: -len(item[0])):
        if name == old or name.startswith(old + "."):
            return (
                f"No module named {name!r}: {old} moved to {new} in neuroplug's plugin "
                f"contract {contract}; import {new + name[len(old) :]} instead (CHANGELOG.md "
                "lists what else changed)"
            )
    return None


class MovedModules(MetaPathFinder):
    """Fails the import of a moved module with a message naming where it went."""

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001 - importlib's signature
        message = moved_message(fullname)
        if message is not None:
            raise ModuleNotFoundError(message, name=fullname)
        return None


def install() -> None:
    """Put :class:`MovedModules` last on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
