"""The settings of ``algo=sep_cma_es`` (:mod:`neuroplug_algorithms.sep_cma_es`), in a module
that imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug_algorithms.cma_es_config import CMAConstants


@dataclass
class SepCMAESConfig(CMAConstants):
    """sep-CMA-ES (Ros & Hansen 2008): CMA with a diagonal covariance, O(D) memory and
    time, so any network fits. Null ``c_1`` and ``c_mu`` take CMA's values multiplied by
    (n + 2) / 3, the paper's faster learning of a diagonal."""
