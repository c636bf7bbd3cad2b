"""A small Hugging Face causal LM trained by backprop on a text task's correct answers,
saved with ``save_pretrained``: the start of an ES fine-tuning run
(``net.type=pretrained_lm net.kwargs.pretrained=<out>``), as in Qiu et al. 2025, whose
models were first trained by gradient descent and then fine-tuned by ES.

The model writes with neuroplug's character tokenizer (its ids are the model's token ids,
id 0 ending a completion), so ``env=<task>`` with no ``env.kwargs.tokenizer`` plays it.
Teacher forcing on ``prompt + answer + end``, the loss on the answer's tokens and the end
only; the held-out accuracy (greedy decoding, the task's own verifier) is printed and
written beside the model as ``pretraining.json``.

    python benchmarks/pretrain_text_lm.py --task countdown --out /tmp/countdown_lm --steps 1500
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from neuroplug.envs.text.task import make_task
from neuroplug.envs.text.tokenizer import CharTokenizer


def batch(task, tokenizer: CharTokenizer, rng: np.random.Generator, size: int, length: int):
    """``size`` problems as ``(ids, labels)`` ``(size, length)``: the prompt then the answer
    and the end token, right-padded with the end id; labels -100 except on the answer and
    its end (predicted from the place before)."""
    ids = torch.zeros(size, length, dtype=torch.long)
    labels = torch.full((size, length), -100, dtype=torch.long)
    for row in range(size):
        problem = task.sample(rng)
        prompt, answer = tokenizer.encode(problem.prompt), tokenizer.encode(problem.answer)
        tokens = prompt + answer + [tokenizer.end]
        ids[row, : len(tokens)] = torch.tensor(tokens)
        labels[row, len(prompt) : len(tokens)] = torch.tensor(answer + [tokenizer.end])
    return ids, labels


@torch.no_grad()
def accuracy(model, task, tokenizer: CharTokenizer, seed: int, problems: int) -> float:
    """The share of ``problems`` held-out problems (drawn from ``seed``) the model solves
    writing greedily, as the task verifies."""
    rng = np.random.default_rng(seed)
    drawn = [task.sample(rng) for _ in range(problems)]
    solved = 0
    for problem in drawn:
        tokens = tokenizer.encode(problem.prompt)
        written: list[int] = []
        for _ in range(task.max_new_tokens + 1):
            logits = model(input_ids=torch.tensor([tokens + written])).logits[0, -1]
            token = int(logits[: tokenizer.vocabulary].argmax())
            if token == tokenizer.end:
                break
            written.append(token)
        solved += task.correct(problem, tokenizer.decode(written))
    return solved / problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="countdown")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    arguments = parser.parse_args()
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(arguments.seed)
    torch.set_num_threads(arguments.threads)
    task = make_task(arguments.task, {})
    tokenizer = CharTokenizer(task.alphabet)
    length = task.max_prompt_length + task.max_new_tokens + 1
    config = LlamaConfig(
        vocab_size=tokenizer.vocabulary, hidden_size=arguments.hidden,
        intermediate_size=3 * arguments.hidden, num_hidden_layers=arguments.layers,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
        bos_token_id=None, eos_token_id=tokenizer.end, pad_token_id=tokenizer.end,
        tie_word_embeddings=True,
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=arguments.learning_rate)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, arguments.learning_rate, total_steps=arguments.steps, pct_start=0.05
    )
    rng = np.random.default_rng(arguments.seed)
    started = time.time()
    for step in range(1, arguments.steps + 1):
        ids, labels = batch(task, tokenizer, rng, arguments.batch, length)
        # The model's own shift: its loss at place t is of token t+1.
        loss = model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 100 == 0 or step == arguments.steps:
            print(f"step {step}  loss {loss.item():.3f}  {time.time() - started:.0f} s", flush=True)
    model.eval()
    held_out = accuracy(model, task, tokenizer, seed=10_000 + arguments.seed, problems=500)
    arguments.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(arguments.out)
    record = {
        "task": arguments.task,
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": arguments.steps,
        "batch": arguments.batch,
        "learning_rate": arguments.learning_rate,
        "seed": arguments.seed,
        "seconds": round(time.time() - started, 1),
        "held_out_accuracy": held_out,
        "held_out_problems": 500,
    }
    (arguments.out / "pretraining.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
