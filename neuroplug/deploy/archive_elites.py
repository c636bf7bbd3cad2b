"""A quality-diversity run's archive elites: the occupied cells, one cell's elite.

``algo=map_elites``, ``cma_mae`` and ``pga_me`` keep an archive of a policy per cell in
their checkpoints; a compact archive (seed chains) is rebuilt into weights by the run's
algorithm, as a resume would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neuroplug.training.policy_sources import PolicySourceError


def archive_cells(run_dir: Path) -> dict[str, np.ndarray]:
    """The occupied cells of ``run_dir``'s quality-diversity archive: ``cells``,
    ``fitness``, ``descriptors`` and ``params`` (rows in the same order)."""
    from neuroplug.training.checkpoint import archive_of

    try:
        archive = archive_of(Path(run_dir))
    except Exception as error:  # no checkpoint, or one from elsewhere
        raise PolicySourceError(f"--cell: cannot read {run_dir}'s checkpoint: {error}") from None
    if archive is None:
        raise PolicySourceError(
            f"--cell: {run_dir} holds no archive (quality diversity: algo=map_elites, "
            "cma_mae, pga_me)"
        )
    if "params" not in archive:  # a compact archive: its elites are seed chains
        archive = _rebuilt_archive(Path(run_dir))
    keys = ("cells", "fitness", "descriptors", "params", "names")
    return {key: archive[key] for key in keys if key in archive}


def _rebuilt_archive(run_dir: Path) -> dict[str, Any]:
    """A compact archive with its elites' weights: the run's algorithm, rebuilt from its
    config, rebuilt from the seed chains as a resume would."""
    from neuroplug.experiment.typed import Experiment
    from neuroplug.training.checkpoint import load_checkpoint
    from neuroplug.training.components import build_components

    state = load_checkpoint(run_dir)
    algorithm = build_components(Experiment.from_yaml(state["config"])).algorithm
    algorithm.load_state_dict(state["algorithm"])
    return algorithm.archive.state_dict()


def archive_cell(run_dir: Path, cell: int) -> dict[str, Any]:
    """Cell ``cell``'s elite: its ``params``, ``fitness`` and ``descriptor``."""
    archive = archive_cells(run_dir)
    cells = np.asarray(archive["cells"])
    found = np.flatnonzero(cells == cell)
    if not len(found):
        shown = ", ".join(str(int(index)) for index in cells[:12])
        more = f", ... ({len(cells)} in all)" if len(cells) > 12 else ""
        raise PolicySourceError(
            f"--cell {cell}: that cell is empty; the occupied cells are {shown}{more} "
            "(--cell list shows them with their descriptors)"
        )
    row = int(found[0])
    return {
        "params": archive["params"][row].float(),
        "fitness": float(archive["fitness"][row]),
        "descriptor": np.asarray(archive["descriptors"][row]),
    }


def list_cells(run_dir: Path) -> str:
    """The occupied cells as lines of ``cell  fitness  descriptor``, best first."""
    archive = archive_cells(run_dir)
    order = np.argsort(-np.asarray(archive["fitness"]), kind="stable")
    names = archive.get("names")  # an archive built without a task has none
    heading = f"[{', '.join(names)}]" if names else "descriptor"
    lines = [f"{'cell':>6}  {'fitness':>10}  {heading}"]
    for row in order:
        descriptor = ", ".join(f"{value:.3g}" for value in np.asarray(archive["descriptors"][row]))
        lines.append(
            f"{int(archive['cells'][row]):>6}  {archive['fitness'][row]:>10.2f}  [{descriptor}]"
        )
    return "\n".join(lines)
