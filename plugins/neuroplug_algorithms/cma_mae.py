"""``algo=cma_mae``: covariance matrix adaptation MAP-annealing.

Fontaine & Nikolaidis (2023), "Covariance Matrix Adaptation MAP-Annealing", GECCO,
Algorithm 1, with separable CMA-ES emitters (Ros & Hansen 2008) so that networks of any
size fit::

    result archive <- empty;  thresholds t_e <- threshold_min for every cell e
    emitters 1..E, each a CMA-ES (mean m, step sigma, diagonal C, paths) at a fresh network
    every generation, for each emitter:
        x_i = m + sigma sqrt(C) z_i, z_i ~ N(0, I), i = 1..lambda
        evaluate -> f_i, descriptor b_i, cell e_i
        Delta_i = f_i - t_{e_i}                                   # improvement ranking
        if f_i > t_{e_i}:  the cell takes x_i;  t_{e_i} <- (1 - alpha) t_{e_i} + alpha f_i
        CMA-ES update with the solutions ranked by Delta (best lambda/2, log weights)
        if no x_i exceeded its threshold: restart the emitter at a random elite, sigma0

alpha = 1 is CMA-ME (the threshold is the elite's fitness); alpha = 0 is CMA-ES on the
objective. A result archive keeps the best solution per cell as MAP-Elites would (the
metrics, the checkpoint and the deployed policy read it); the thresholds archive keeps its
own elites, which annealing may replace with lower ones.

On noisy tasks the result archive's elites are re-evaluated as MAP-Elites' are
(:mod:`neuroplug.evolution.reevaluation`: their fitness the mean over all their
episodes); the thresholds are the emitters' learning signal, annealed from single
evaluations as in the paper, and left as they are.

The emitters' solutions form one population: one batched forward over the alive members.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.evolution.archive import build_archive, member_descriptors
from neuroplug.evolution.reevaluation import ElitesReevaluation
from neuroplug.population.members import Population
from neuroplug_algorithms.cma_mae_config import CMAMAEConfig


class SeparableEmitter:
    """One separable CMA-ES (mean, step size, diagonal covariance, evolution paths)."""

    def __init__(self, mean: torch.Tensor, sigma: float, batch: int) -> None:
        n = len(mean)
        self.mean, self.sigma = mean.double().clone(), float(sigma)
        self.variances = torch.ones(n, dtype=torch.float64)
        self.path_sigma = torch.zeros(n, dtype=torch.float64)
        self.path_c = torch.zeros(n, dtype=torch.float64)
        self.updates = 0
        parents = batch // 2
        weights = math.log((batch + 1) / 2) - torch.log(
            torch.arange(1, parents + 1, dtype=torch.float64)
        )
        self.weights = weights / weights.sum()
        mu_eff = 1.0 / float((self.weights**2).sum())
        self.mu_eff = mu_eff
        self.c_sigma = (mu_eff + 2) / (n + mu_eff + 5)
        self.d_sigma = 1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (n + 1)) - 1) + self.c_sigma
        self.c_c = (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
        faster = (n + 2) / 3  # sep-CMA's learning rates (Ros & Hansen 2008)
        self.c_1 = min(1.0, faster * 2 / ((n + 1.3) ** 2 + mu_eff))
        self.c_mu = min(
            1 - self.c_1, faster * 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff)
        )
        self.chi_n = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))

    def ask(self, normals: torch.Tensor) -> torch.Tensor:
        """Solutions ``m + sigma sqrt(C) z`` for standard normals ``z`` ``(lambda, n)``."""
        return self.mean + self.sigma * self.variances.sqrt() * normals

    def tell(self, solutions: torch.Tensor, order: np.ndarray) -> None:
        """Update from ``solutions`` ranked best first by ``order``."""
        chosen = solutions[torch.from_numpy(order[: len(self.weights)].copy())]
        steps = (chosen - self.mean) / self.sigma
        step = self.weights @ steps
        self.mean = self.mean + self.sigma * step
        self.updates += 1
        self.path_sigma = (1 - self.c_sigma) * self.path_sigma + math.sqrt(
            self.c_sigma * (2 - self.c_sigma) * self.mu_eff
        ) * (step / self.variances.sqrt())
        norm = float(self.path_sigma.norm())
        self.sigma *= math.exp(min(1.0, self.c_sigma / self.d_sigma * (norm / self.chi_n - 1)))
        threshold = (1.4 + 2 / (len(self.mean) + 1)) * self.chi_n
        stalled = norm / math.sqrt(1 - (1 - self.c_sigma) ** (2 * self.updates)) >= threshold
        h_sigma = 0.0 if stalled else 1.0
        self.path_c = (1 - self.c_c) * self.path_c + h_sigma * math.sqrt(
            self.c_c * (2 - self.c_c) * self.mu_eff
        ) * step
        correction = (1 - h_sigma) * self.c_c * (2 - self.c_c) * self.variances
        self.variances = (
            (1 - self.c_1 - self.c_mu) * self.variances
            + self.c_1 * (self.path_c.square() + correction)
            + self.c_mu * (self.weights @ steps.square())
        ).clamp(min=1e-20)

    def state_dict(self) -> dict[str, Any]:
        """What the emitter continues from."""
        return {
            "mean": self.mean.clone(),
            "sigma": self.sigma,
            "variances": self.variances.clone(),
            "path_sigma": self.path_sigma.clone(),
            "path_c": self.path_c.clone(),
            "updates": self.updates,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.mean, self.sigma = state["mean"].clone(), float(state["sigma"])
        self.variances = state["variances"].clone()
        self.path_sigma, self.path_c = state["path_sigma"].clone(), state["path_c"].clone()
        self.updates = int(state["updates"])


class CMAMAE(EvolutionAlgorithm):
    """CMA-MAE: separable CMA-ES emitters over an annealing threshold archive."""

    config_class = CMAMAEConfig

    def __init__(self, config: CMAMAEConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.archive = build_archive(config, context)
        self.thresholds = np.full(self.archive.cells, config.start_threshold, dtype=np.float64)
        starts = self.draw_seeds(config.emitters)
        self.emitters = [
            SeparableEmitter(self.fresh_params(int(seed)), config.sigma0, config.emitter_batch)
            for seed in starts
        ]
        self._solutions: torch.Tensor | None = None
        self.restarts = 0
        self.reevaluation = ElitesReevaluation(config, self.archive)

    def behavior(self) -> str | None:
        return self.config.behavior

    def episodes_per_member(self) -> int:
        if self.reevaluation.open:
            return self.reevaluation.episodes
        return self.config.episodes_per_member

    def _ask(self) -> Population:
        if self.reevaluation.open:
            return self.reevaluation.elites()
        batch = self.config.emitter_batch
        solutions = []
        for emitter in self.emitters:
            normals = torch.from_numpy(self.rng.standard_normal((batch, len(emitter.mean))))
            solutions.append(emitter.ask(normals))
        self._solutions = torch.cat(solutions)
        return Population.dense(self._solutions.float())

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        config, batch = self.config, self.config.emitter_batch
        if self.reevaluation.open:
            stats = self.reevaluation.fold(fitness, result, config.qd_offset)
            self.best_params = self.archive.params[self.archive.best()].clone()
            return {**self.archive.metrics(config.qd_offset), **stats}
        descriptors = member_descriptors(result)
        members = self._solutions.float()
        # The result archive: each solution the mean of its episodes.
        added = self.archive.add(members, fitness, descriptors, episodes=result.returns.shape[1])
        cells = self.archive.index(descriptors)
        improvements = np.empty(len(fitness))
        accepted = np.zeros(len(fitness), dtype=bool)
        alpha = config.archive_learning_rate
        for i, (cell, value) in enumerate(zip(cells, fitness, strict=True)):
            improvements[i] = value - self.thresholds[cell]
            if value > self.thresholds[cell]:
                accepted[i] = True
                self.thresholds[cell] = (1 - alpha) * self.thresholds[cell] + alpha * value
        for index, emitter in enumerate(self.emitters):
            rows = slice(index * batch, (index + 1) * batch)
            if not accepted[rows].any():
                self._restart(index)
                continue
            order = np.argsort(-improvements[rows], kind="stable")
            emitter.tell(self._solutions[rows], order)
        self.best_params = self.archive.params[self.archive.best()].clone()
        if self.reevaluation.due(self.generation + 1, result.episodes):
            self.continue_generation()
        return {
            **self.archive.metrics(config.qd_offset),
            **added,
            "accepted": float(accepted.sum()),
            "restarts": float(self.restarts),
            "mean_sigma": float(np.mean([emitter.sigma for emitter in self.emitters])),
        }

    def _restart(self, index: int) -> None:
        """A fresh emitter at a random elite of the result archive (the paper's basic rule)."""
        occupied = self.archive.occupied
        start = self.archive.params[int(self.rng.choice(occupied))]
        self.emitters[index] = SeparableEmitter(
            start, self.config.sigma0, self.config.emitter_batch
        )
        self.restarts += 1

    def policy_params(self) -> torch.Tensor:
        return self.best_params.clone()

    def _state(self) -> dict[str, Any]:
        return {
            "archive": self.archive.state_dict(),
            "thresholds": self.thresholds.copy(),
            "emitters": [emitter.state_dict() for emitter in self.emitters],
            "restarts": self.restarts,
            "reevaluation": self.reevaluation.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.archive.load_state_dict(state["archive"])
        self.thresholds = np.asarray(state["thresholds"], dtype=np.float64).copy()
        for emitter, saved in zip(self.emitters, state["emitters"], strict=True):
            emitter.load_state_dict(saved)
        self.restarts = int(state["restarts"])
        self.reevaluation.load_state_dict(state["reevaluation"])
