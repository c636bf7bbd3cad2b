"""Reusable checks for plugin authors: run them from your own plugin's tests."""

from neuroplug.testing.algorithm_contract import check_algorithm_contract
from neuroplug.testing.backend_contract import check_backend_contract
from neuroplug.testing.compose import compose
from neuroplug.testing.env_family_contract import check_env_family
from neuroplug.testing.learner_contract import check_learner_contract, learner_context
from neuroplug.testing.network_contract import check_network_contract
from neuroplug.testing.population_member import check_population_member
from neuroplug.testing.resume_check import check_learner_resume, check_resume_is_exact
from neuroplug.testing.scheduler_contract import check_scheduler_contract
from neuroplug.testing.settings import resolved_settings
from neuroplug.testing.synthetic import synthetic_context, synthetic_result

__all__ = [
    "check_algorithm_contract",
    "check_backend_contract",
    "check_env_family",
    "check_learner_contract",
    "check_learner_resume",
    "check_network_contract",
    "check_population_member",
    "check_resume_is_exact",
    "check_scheduler_contract",
    "compose",
    "learner_context",
    "resolved_settings",
    "synthetic_context",
    "synthetic_result",
]
