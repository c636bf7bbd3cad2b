"""Run a peer's script with PyTorch's float32 matmul precision set first, so a peer and
neuroplug compare at the same ``run.matmul_precision``:
``python with_matmul_precision.py medium script.py --its --arguments``."""

from __future__ import annotations

import runpy
import sys

import torch


def main() -> None:
    precision, script = sys.argv[1], sys.argv[2]
    torch.set_float32_matmul_precision(precision)
    sys.argv = [script, *sys.argv[3:]]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
