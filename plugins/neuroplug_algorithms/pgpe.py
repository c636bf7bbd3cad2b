"""``algo=pgpe``: policy gradients with parameter-based exploration, moved by ClipUp.

Sehnke, Osendorfer, Rückstieß, Graves, Peters & Schmidhuber (2010), "Parameter-exploring
policy gradients", Neural Networks 23(4), with its symmetric sampling (section 4.1); the
center moved by ClipUp (Toklu, Liskowski & Srivastava 2020, "ClipUp: A Simple and Powerful
Optimizer for Distribution-based Policy Evolution"), EvoTorch's recommended RL setting.
Per generation, for a diagonal Gaussian N(mu, diag(sigma)^2)::

    eps_k = sigma ⊙ s_k, s_k ~ N(0, I);  x_k+ = mu + eps_k,  x_k- = mu - eps_k    k = 1..lambda/2
    evaluate; f = shaped fitness (centered ranks, or Sehnke's baseline normalisation)
    grad_mu    = 1/K sum_k (f_k+ - f_k-) / 2 * eps_k
    grad_sigma = 1/K sum_k ((f_k+ + f_k-) / 2 - b) * (eps_k^2 - sigma^2) / sigma
    mu    <- mu + ClipUp(grad_mu)
    sigma <- clip(sigma + eta_sigma grad_sigma, (1 ± stdev_max_change) sigma)

    ClipUp: v <- m v + alpha grad / ||grad||;  v <- v min(1, v_max / ||v||);  step = v

``b`` is the shaped fitness' mean (0 for centered ranks). The initial std is
``radius_init / sqrt(D)`` for every parameter (ClipUp's radius). A population is the mean,
sigma and one seed per mirrored pair (:class:`~neuroplug.population.members.Population`): O(D)
memory, and the update regenerates ``s_k`` from the seeds.

Departures: the mean's and the std's gradients are divided by the number of directions K
(as EvoTorch's implementation does; Sehnke et al. fold it into the learning rates); the
std's relative change is clipped (EvoTorch's ``stdev_max_change``) so a noisy generation
cannot collapse it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import centered_ranks, weighted_noise_sums
from neuroplug.optim.adam import FlatAdam
from neuroplug.population.members import Population
from neuroplug_algorithms.gaussian_search import (
    GaussianStrategy,
    diagonal_population,
)
from neuroplug_algorithms.pgpe_config import PGPEConfig


class ClipUp:
    """Toklu et al. (2020)'s optimizer: normalised gradient steps with momentum, the
    velocity's norm clipped at ``max_speed``."""

    def __init__(self, dimension: int, step_size: float, max_speed: float, momentum: float):
        self.step_size, self.max_speed, self.momentum = step_size, max_speed, momentum
        self.velocity = torch.zeros(dimension, dtype=torch.float64)

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        """The move along (ascending) ``gradient``."""
        norm = float(gradient.norm())
        direction = gradient / norm if norm > 0 else gradient
        self.velocity = self.momentum * self.velocity + self.step_size * direction
        speed = float(self.velocity.norm())
        if speed > self.max_speed:
            self.velocity *= self.max_speed / speed
        return self.velocity

    def state_dict(self) -> dict[str, Any]:
        return {"velocity": self.velocity.clone()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.velocity = state["velocity"].clone()


class PGPE(GaussianStrategy):
    """PGPE with symmetric sampling and ClipUp; see the module docstring."""

    config_class = PGPEConfig

    def __init__(self, config: PGPEConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.population_size += self.population_size % 2  # pairs
        d = self.num_params
        self.mu = context.initial_params.detach().double().clone()
        self.sigma = torch.full((d,), config.radius_init / math.sqrt(d), dtype=torch.float64)
        rate = config.center_learning_rate
        self.clipup = ClipUp(d, rate, config.max_speed or 2 * rate, config.momentum)
        self.adam_center = self.mu.float().clone()
        self.adam = FlatAdam(self.adam_center, rate)

    @property
    def mean(self) -> torch.Tensor:
        return self.mu

    def _ask(self) -> Population:
        pairs = self.population_size // 2
        seeds = self.draw_seeds(pairs).repeat_interleave(2)
        signs = torch.tensor([1.0, -1.0]).repeat(pairs)
        return diagonal_population(self.mu, self.sigma, seeds, signs)

    def _shaped(self, fitness: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The pairs' weights for the mean and for the std, and the baseline."""
        plus, minus = fitness[0::2], fitness[1::2]
        if self.config.fitness_shaping == "centered_ranks":
            shaped = centered_ranks(fitness)
            plus, minus = shaped[0::2], shaped[1::2]
            baseline = float(shaped.mean())
            return (plus - minus) / 2, (plus + minus) / 2 - baseline, baseline
        # Sehnke et al.: the mean's weights over the distance of the pair from the best,
        # the std's against the baseline over the best's distance from it.
        best, baseline = float(fitness.max()), float(fitness.mean())
        center = (plus - minus) / np.maximum(2 * best - plus - minus, 1e-12)
        spread = ((plus + minus) / 2 - baseline) / max(best - baseline, 1e-12)
        return center, spread, baseline

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        center_weights, spread_weights, baseline = self._shaped(fitness)
        seeds = population.seed[0::2]
        pairs = len(seeds)
        grad_mu, grad_sigma = weighted_noise_sums(
            seeds,
            [(torch.from_numpy(center_weights), 1), (torch.from_numpy(spread_weights), 2)],
            self.num_params,
            scale=self.sigma,
            dtype=torch.float64,
        )
        grad_mu /= pairs
        spread_total = float(spread_weights.sum())
        grad_sigma = (grad_sigma - spread_total * self.sigma**2) / self.sigma / pairs
        self.mu = self.mu + self._center_step(grad_mu)
        sigma = self.sigma + self.config.stdev_learning_rate * grad_sigma
        if self.config.stdev_max_change:
            change = self.config.stdev_max_change
            sigma = torch.clamp(sigma, self.sigma * (1 - change), self.sigma * (1 + change))
        self.sigma = sigma
        return {
            "sigma_mean": float(self.sigma.mean()),
            "gradient_norm": float(grad_mu.norm()),
            "baseline": baseline,
        }

    def _center_step(self, gradient: torch.Tensor) -> torch.Tensor:
        if self.config.optimizer == "clipup":
            return self.clipup.step(gradient)
        if self.config.optimizer == "sgd":
            return self.config.center_learning_rate * gradient
        self.adam_center.copy_(self.mu.float())
        self.adam.step(-gradient.float())  # Adam descends
        return self.adam_center.double() - self.mu

    def _state(self) -> dict[str, Any]:
        return {
            "mu": self.mu.clone(),
            "sigma": self.sigma.clone(),
            "population_size": self.population_size,
            "clipup": self.clipup.state_dict(),
            "adam": self.adam.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mu, self.sigma = state["mu"].clone(), state["sigma"].clone()
        self.population_size = int(state["population_size"])
        self.clipup.load_state_dict(state["clipup"])
        self.adam.load_state_dict(state["adam"])
