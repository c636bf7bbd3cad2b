"""A low-rank population of a language model's generation step beside one shared model's,
at the same total batch: what ``benchmarks/hyperscale_model.py`` predicts, measured.

The model is a ``transformers`` Qwen2 built from a config (random weights: nothing is
downloaded, so it runs on a machine without a network), ``--model`` one of Qwen2.5's
shapes (``Qwen2.5-0.5B`` ...) or ``tiny`` (width 128, 2 layers: a CPU smoke test). Each of
``--members`` members writes ``--prompts`` contexts of ``--context`` tokens; one step is
the ``net.type=pretrained_lm`` forward of every row (the newest token from a KV cache, or
its whole context with ``--whole-context``; the newest token's logits):

- **shared**: the model once over every row (one model's batched inference: the bound);
- **factored**: ``FactoredModule`` at ``--rank`` (every matrix low-rank, the base product
  shared by all rows, each row's part added).

Each is the median of ``--repeats`` calls after two warm-ups (CUDA synchronised). Writes
``--out`` (markdown, with the device and versions) and prints it.

    python benchmarks/pretrained_lm_forward.py --model tiny --members 8 --prompts 2
    python benchmarks/pretrained_lm_forward.py --model Qwen2.5-0.5B --device cuda --members 64 256
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from hyperscale_model import QWEN25
from machine import describe
from module_lowrank_forward import one_base_population, timed
from neuroplug_backends.module_lowrank import FactoredModule

from neuroplug.nets.pretrained_lm import PretrainedLMNetwork

RESULTS = Path(__file__).resolve().parent / "results"
TINY = {"hidden_size": 128, "intermediate_size": 512, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 4096}  # fmt: skip


def qwen2_config(name: str) -> dict:
    """The ``net.kwargs.config`` of Qwen2.5 shape ``name`` (or ``tiny``)."""
    if name == "tiny":
        shape = dict(TINY)
    else:
        found = {s.name: s for s in QWEN25}[name]
        shape = {
            "hidden_size": found.hidden, "intermediate_size": found.intermediate,
            "num_hidden_layers": found.layers, "num_attention_heads": found.heads,
            "num_key_value_heads": found.kv_heads, "vocab_size": found.vocabulary,
            "tie_word_embeddings": found.tied,
        }  # fmt: skip
    return {"model_type": "qwen2", "max_position_embeddings": 4096, **shape}


def timed_on(call, repeats: int, device: torch.device) -> float:
    """Median seconds of ``call()`` after two warm-ups (:func:`module_lowrank_forward.timed`),
    CUDA synchronised after each."""

    def synchronised():
        call()
        if device.type == "cuda":
            torch.cuda.synchronize()

    return timed(synchronised, repeats)


def measure(network, members: int, prompts: int, context: int, rank: int, repeats: int,
            device: torch.device) -> dict:  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    population = one_base_population(network, members, rank, 1, generator)
    rows = members * prompts
    index = torch.arange(members).repeat_interleave(prompts)
    vocabulary = network.output_size
    ids = torch.randint(1, vocabulary + 1, (rows, context), generator=generator).float()
    ids = ids.to(device)
    base = {
        name: t.to(device) for name, t in network.layout.split(population.base_params()[0]).items()
    }

    # A cached model steps the newest token from a cache holding the others (zeros here:
    # the arithmetic is the same; its count says what it holds).
    state = ()
    if network.state_size:
        state = (torch.zeros((rows, network.state_size), device=device),)
        state[0][:, -1] = context - 1

    @torch.no_grad()
    def shared():
        return torch.func.functional_call(network.module, base, (ids, *state))

    factored = FactoredModule(network, population, device)
    shared_s = timed_on(shared, repeats, device)
    factored_s = timed_on(lambda: factored.forward(index, ids, *state), repeats, device)
    return {
        "members": members, "rows": rows, "shared_s": shared_s, "factored_s": factored_s,
        "tokens_per_s_shared": rows * (1 if network.state_size else context) / shared_s,
        "ratio": shared_s / factored_s,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--members", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--context", type=int, default=32)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--whole-context", action="store_true", help="no KV cache: each step runs the context"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "pretrained_lm_forward.md")
    arguments = parser.parse_args()
    device = torch.device(arguments.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = (
            True  # float32 products as TF32, as the model assumes
        )
    config = qwen2_config(arguments.model)
    kwargs = {"config": config, "cache": False if arguments.whole_context else None}
    network = PretrainedLMNetwork((arguments.context,), config["vocab_size"], kwargs)
    network.module.to(device)
    where = torch.cuda.get_device_name() if device.type == "cuda" else describe()
    lines = [
        f"# {arguments.model} ({network.num_params / 1e6:.0f}M params): a rank-"
        f"{arguments.rank} population's step beside one shared model's"
        f"{' (whole context)' if arguments.whole_context else ' (KV cache)'}\n",
        f"`python benchmarks/pretrained_lm_forward.py --model {arguments.model} --device "
        f"{arguments.device} --members {' '.join(map(str, arguments.members))} --prompts "
        f"{arguments.prompts} --context {arguments.context}` on {where}, torch "
        f"{torch.__version__}, {time.strftime('%Y-%m-%d')}; float32.\n",
        "| members x prompts | shared step ms | factored step ms | factored / shared speed | shared tokens/s |",
        "|---|---|---|---|---|",
    ]
    for members in arguments.members:
        result = measure(network, members, arguments.prompts, arguments.context,
                         arguments.rank, arguments.repeats, device)  # fmt: skip
        lines.append(
            f"| {members} x {arguments.prompts} | {1e3 * result['shared_s']:.1f} | "
            f"{1e3 * result['factored_s']:.1f} | {result['ratio']:.2f} | "
            f"{result['tokens_per_s_shared']:,.0f} |"
        )
        print(lines[-1], flush=True)
    arguments.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
