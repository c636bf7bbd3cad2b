"""Reusable checks for plugin authors: run them from your own plugin's tests."""

from neuroplug.testing.algorithm_contract import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact
from neuroplug.testing.synthetic import synthetic_context, synthetic_result

__all__ = [
    "check_algorithm_contract",
    "check_resume_is_exact",
    "synthetic_context",
    "synthetic_result",
]
