"""Reusable checks for plugin authors: run them from your own plugin's tests."""

from neuroplug.testing.algorithm_contract import check_algorithm_contract

__all__ = ["check_algorithm_contract"]
