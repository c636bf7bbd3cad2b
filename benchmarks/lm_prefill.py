"""A whole generation of a low-rank language-model population, the prompt read in one
forward (the prefill, what text tasks do) beside a token a step (what they did).

Each of ``--members`` members writes ``--prompts`` completions: a prompt of ``--prompt``
tokens, then ``--new`` tokens a step from its KV cache. Timed through ``FactoredModule``
(the path a low-rank run takes: one base product for every row, each row's own part
added) and one shared model's forward over the same rows (the bound), for
``net.type=pretrained_lm`` of a Llama shape (``--width``, ``--layers``; the 0.86M model
of the Countdown fine-tuning evidence by default) and ``net.type=causal_lm``. Tokens are
random (the arithmetic does not depend on them). Median of ``--repeats`` whole
generations after two warm-ups, with the C allocator keeping freed memory as runs do
(:mod:`neuroplug.runtime.memory`; ``--return-freed-memory``: its defaults). Writes ``--out``
(markdown, with the machine) and prints it.

    python benchmarks/lm_prefill.py --members 32 --prompts 32
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from machine import describe
from module_lowrank_forward import one_base_population, timed
from neuroplug_backends.module_lowrank import FactoredModule

from neuroplug.nets.causal_lm import CausalLMNetwork
from neuroplug.nets.pretrained_lm import PretrainedLMNetwork
from neuroplug.runtime.memory import keep_freed_memory

RESULTS = Path(__file__).resolve().parent / "results"
VOCABULARY = 20


def networks(width: int, layers: int, context: int) -> dict:
    llama = {
        "model_type": "llama", "vocab_size": VOCABULARY, "hidden_size": width,
        "intermediate_size": 3 * width, "num_hidden_layers": layers, "num_attention_heads": 4,
        "num_key_value_heads": 4, "max_position_embeddings": 64, "tie_word_embeddings": True,
    }  # fmt: skip
    own = {"d_model": width, "heads": 4, "layers": layers, "vocabulary": VOCABULARY}
    return {
        "pretrained_lm (Llama)": PretrainedLMNetwork((context,), VOCABULARY, {"config": llama}),
        "causal_lm": CausalLMNetwork((context,), VOCABULARY, own),
    }


def generation(step, rows: int, state_size: int, ids: torch.Tensor, prompt: int, at_once: bool):
    """One generation: the prompt (at once, or a token a step), then the new tokens."""
    state = torch.zeros((rows, state_size))
    first = prompt if at_once else 1
    for shown in range(first, ids.shape[1] + 1):
        _, state = step(ids[:, :shown], state)


def measure(network, members: int, prompts: int, prompt: int, new: int, repeats: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    population = one_base_population(network, members, 1, 1, generator)
    rows, context = members * prompts, prompt + new
    index = torch.arange(members).repeat_interleave(prompts)
    ids = torch.randint(1, VOCABULARY + 1, (rows, context), generator=generator).float()
    base = network.layout.split(population.base_params()[0])
    factored = FactoredModule(network, population, torch.device("cpu"))

    def padded(shown: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(shown, (0, context - shown.shape[1]))

    @torch.no_grad()
    def shared(shown, state):
        return torch.func.functional_call(network.module, base, (padded(shown), state))

    def factored_step(shown, state):
        return factored.forward(index, padded(shown), state)

    result = {"rows": rows}
    for name, step in (("shared", shared), ("factored", factored_step)):
        for at_once in (False, True):
            seconds = timed(
                lambda step=step, at_once=at_once: generation(
                    step, rows, network.state_size, ids, prompt, at_once
                ),
                repeats,
            )
            result[(name, at_once)] = seconds
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=12, help="prompt tokens")
    parser.add_argument("--new", type=int, default=8, help="tokens written after it")
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--return-freed-memory", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS / "lm_prefill.md")
    arguments = parser.parse_args()
    kept = not arguments.return_freed_memory and keep_freed_memory()
    context = arguments.prompt + arguments.new
    lines = [
        "# A low-rank language-model population's generation: the prompt in one forward "
        "beside a token a step\n",
        f"`python benchmarks/lm_prefill.py --members {arguments.members} --prompts "
        f"{arguments.prompts} --prompt {arguments.prompt} --new {arguments.new} --width "
        f"{arguments.width} --layers {arguments.layers}"
        f"{' --return-freed-memory' if arguments.return_freed_memory else ''}` on {describe()}, "
        f"torch "
        f"{torch.__version__}, {time.strftime('%Y-%m-%d')}; float32, rank 1, "
        f"{torch.get_num_threads()} threads, freed memory "
        f"{'kept by the allocator' if kept else 'handed back (glibc defaults)'}. A generation: "
        f"{arguments.members} members x "
        f"{arguments.prompts} prompts of {arguments.prompt} tokens, {arguments.new} tokens "
        "written each; median of whole generations.\n",
        "| network | params | path | a token a step, ms | prompt at once, ms | speed-up |",
        "|---|---|---|---|---|---|",
    ]
    for label, network in networks(arguments.width, arguments.layers, context).items():
        result = measure(
            network, arguments.members, arguments.prompts, arguments.prompt, arguments.new,
            arguments.repeats,
        )  # fmt: skip
        for path in ("shared", "factored"):
            stepped, at_once = result[(path, False)], result[(path, True)]
            lines.append(
                f"| {label} | {network.num_params:,} | {path} | {1e3 * stepped:.0f} | "
                f"{1e3 * at_once:.0f} | {stepped / at_once:.2f}x |"
            )
            print(lines[-1], flush=True)
    arguments.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
