"""GPU memory is reported for CUDA backends and left out on the CPU."""

from __future__ import annotations

import torch

from neuroplug.training.trainer import _gpu_memory


def test_no_gpu_metrics_on_cpu():
    assert _gpu_memory(torch.device("cpu")) == {}


def test_gpu_metrics_in_mib_on_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: 3 * 2**20)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device: 2**20)
    assert _gpu_memory(torch.device("cuda:0")) == {"gpu_memory_peak_mb": 3.0, "gpu_memory_mb": 1.0}
