"""Device settings (``backend.device``, ``algo.device``) as torch devices, checked against what this machine has."""

from __future__ import annotations

import torch

from neuroplug.errors import ConfigError


def resolve_device(name: str, field: str = "backend.device") -> torch.device:
    """``auto`` becomes CUDA when available, else CPU; others are checked (errors name
    ``field``)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise ConfigError(field, f"{name!r} is not a device", "auto, cpu, cuda, cuda:N") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(field, "CUDA was requested but no GPU is visible", "auto or cpu")
    return device
