"""What a low-rank ES population of a 0.5B-7B language model needs on one H100 or H200:
a memory and throughput model on paper, before any GPU visit (issue 70).

Arithmetic only (nothing is timed): the shapes of Qwen2.5's public configs, neuroplug's
factored forward as it is written (``neuroplug_backends.module_lowrank``: one base forward
over every row, each row's rank-r part added by two thin products whose factors are
gathered per row), and a GPU's published peak rates. It says, per model and population:

- **memory**: the model as the module holds it and the population's base (float32, as
  neuroplug runs a population today; ``--bytes 2`` for bfloat16), every member's factors
  of every low-rank matrix, the per-row copies of one matrix's factors at a time, the
  activations of one layer for the contexts in flight (each step runs the whole context
  again: ``pretrained_lm`` has no KV cache yet), and ES's center and Adam moments (host
  memory: the algorithm runs on the CPU);
- **throughput**: a generation step's time as the larger of its arithmetic at the peak
  rate and its memory traffic at the peak bandwidth, for the shared model alone and for
  the population; their ratio is EGGROLL's number (0.91 reported on an H100). Two ways
  to step: the whole context again (today's ``pretrained_lm``: arithmetic-bound) and one
  token with a KV cache (``causal_lm``; bound by memory traffic), where it matters how
  the factors are read: per row as written, once per member, or drawn in registers.

Writes ``benchmarks/results/hyperscale_model.md``. The GPU visit script
(``benchmarks/gpu_visit.sh hyperscale``) measures what this predicts.

    python benchmarks/hyperscale_model.py
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Shape:
    """A decoder's shape, as its ``config.json`` says."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocabulary: int
    tied: bool

    def matrices(self) -> list[tuple[int, int]]:
        """Every weight matrix ``(out, in)``: each layer's seven, the embedding, the head."""
        d, f, kv = self.hidden, self.intermediate, self.kv_heads * (self.hidden // self.heads)
        layer = [(d, d), (kv, d), (kv, d), (d, d), (f, d), (f, d), (d, f)]
        head = [] if self.tied else [(self.vocabulary, d)]
        return layer * self.layers + [(self.vocabulary, d), *head]

    @property
    def parameters(self) -> int:
        """D: matrices, the q/k/v biases, two norms a layer and the final one."""
        d, kv = self.hidden, self.kv_heads * (self.hidden // self.heads)
        biases = self.layers * (d + 2 * kv)
        norms = (2 * self.layers + 1) * d
        return sum(m * n for m, n in self.matrices()) + biases + norms


QWEN25 = (  # Qwen2.5's config.json files (hidden, intermediate, layers, heads, kv, vocab, tied)
    Shape("Qwen2.5-0.5B", 896, 4864, 24, 14, 2, 151936, True),
    Shape("Qwen2.5-1.5B", 1536, 8960, 28, 12, 2, 151936, True),
    Shape("Qwen2.5-3B", 2048, 11008, 36, 16, 2, 151936, True),
    Shape("Qwen2.5-7B", 3584, 18944, 28, 28, 4, 152064, False),
)


@dataclass(frozen=True)
class GPU:
    name: str
    memory_gb: float
    bandwidth_tb_s: float
    tf32_tflops: float
    """Dense tensor-core TF32 (float32 products as ``torch`` runs them with TF32 allowed)."""


GPUS = (GPU("H100 SXM 80GB", 80, 3.35, 495), GPU("H200 141GB", 141, 4.8, 495))
"""NVIDIA's data-sheet rates (dense, without sparsity)."""


def plan(shape: Shape, gpu: GPU, members: int, prompts: int, context: int, rank: int,
         width: int) -> dict:  # fmt: skip
    """Memory (GB) and step times (ms) of one evaluation step over ``members x prompts``
    rows, ``width`` bytes a number."""
    rows = members * prompts
    sides = sum(m + n for m, n in shape.matrices())
    weights = 2 * shape.parameters * width  # the module's own tensors and the base
    factors = members * rank * sides * 4  # every member's A and B, float32 noise
    gathered = rows * rank * max(m + n for m, n in shape.matrices()) * 4  # one matrix's
    per_layer = rows * context * max(shape.intermediate, shape.heads * context) * 4 * 3
    gpu_total = weights + factors + gathered + per_layer
    host = 3 * shape.parameters * 4  # ES's center and Adam's two moments
    peak, bandwidth = gpu.tf32_tflops * 1e12, gpu.bandwidth_tb_s * 1e12

    def ms(flops: float, moved: float) -> float:
        return 1e3 * max(flops / peak, moved / bandwidth)

    kv = shape.kv_heads * (shape.hidden // shape.heads)
    # Without a cache a step runs every row's whole context: 2 D flops a token; with one
    # (a token a step) it reads the weights once and each row's cache.
    tokens = {"whole": rows * context, "cached": rows}
    traffic = {
        "whole": shape.parameters * width
        + rows * context * shape.hidden * shape.layers * 8 * width,
        "cached": shape.parameters * width + rows * shape.layers * 2 * context * kv * width,
    }
    # A correction reads its rows' inputs and adds to their outputs (both sides of every
    # matrix, a token each), and reads the factors: per row as written (gathered: written,
    # then read), once per member (grouped), or not at all (fused, drawn in registers).
    factor_reads = {
        "as written": 3 * rows * rank * sides * 4,
        "grouped": members * rank * sides * 4,
        "registers": 0,
    }
    times = {}
    for mode, count in tokens.items():
        shared = ms(2 * shape.parameters * count, traffic[mode])
        times[f"{mode} shared"] = shared
        for reading, read in factor_reads.items():
            # Fused into the base product (EGGROLL's kernel), it adds no pass over the
            # activations; as separate products it reads and writes them once more.
            passes = 0 if reading == "registers" else count * sides * width
            correction = ms(4 * rank * sides * count, passes + read)
            times[f"{mode} {reading}"] = shared / (shared + correction)
    return {
        "rows": rows,
        "gpu_gb": gpu_total / 1e9,
        "weights_gb": weights / 1e9,
        "factors_gb": factors / 1e9,
        "gathered_gb": gathered / 1e9,
        "activations_gb": per_layer / 1e9,
        "host_gb": host / 1e9,
        "fits": gpu_total <= 0.9 * gpu.memory_gb * 1e9,
        **times,
    }


def table(members: list[int], prompts: int, context: int, rank: int, width: int) -> str:
    lines = [
        "| model | D | GPU | members x prompts | GPU memory GB (weights, factors, per-row, "
        "activations) | fits | host GB (ES state) | whole context: shared step ms, "
        "population/shared as written | KV cache: shared step ms, population/shared as "
        "written, factors grouped per member, fused with factors drawn in registers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shape in QWEN25:
        for gpu in GPUS:
            for count in members:
                p = plan(shape, gpu, count, prompts, context, rank, width)
                lines.append(
                    f"| {shape.name} | {shape.parameters / 1e9:.2f}B | {gpu.name} | "
                    f"{count} x {prompts} | {p['gpu_gb']:.1f} ({p['weights_gb']:.1f}, "
                    f"{p['factors_gb']:.1f}, {p['gathered_gb']:.1f}, {p['activations_gb']:.1f}) | "
                    f"{'yes' if p['fits'] else '**no**'} | {p['host_gb']:.0f} | "
                    f"{p['whole shared']:.0f}, {p['whole as written']:.2f} | "
                    f"{p['cached shared']:.2f}, {p['cached as written']:.2f}, "
                    f"{p['cached grouped']:.2f}, {p['cached registers']:.2f} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, nargs="+", default=[32, 256, 1024])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--bytes", type=int, default=4, help="bytes a weight: 4 float32, 2 bf16")
    parser.add_argument("--out", type=Path, default=RESULTS / "hyperscale_model.md")
    arguments = parser.parse_args()
    body = table(
        arguments.members, arguments.prompts, arguments.context, arguments.rank, arguments.bytes
    )
    text = (
        "# Low-rank ES of 0.5B-7B language models on one GPU: the model on paper\n\n"
        f"`python benchmarks/hyperscale_model.py` (rank {arguments.rank}, context "
        f"{arguments.context} tokens, {arguments.prompts} prompts a member, weights of "
        f"{arguments.bytes} bytes). Arithmetic, not a measurement: see the script's "
        "docstring for what each column counts.\n\n" + body + "\n"
    )
    arguments.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
