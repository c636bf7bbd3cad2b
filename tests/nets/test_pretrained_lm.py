"""``net.type=pretrained_lm``: a ``transformers`` causal LM (built from a config, or saved
with ``save_pretrained`` and loaded back with its own tokenizer) as a population, batched
over members and factored in low rank (tied embeddings, RMSNorm); its settings checked."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")

from tiny_pretrained import save_tiny_model  # noqa: E402

import neuroplug  # noqa: E402
from neuroplug.app import run_job  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.nets.pretrained_lm import PretrainedLMNetwork  # noqa: E402
from neuroplug.nets.pretrained_lm_config import PretrainedLMSettings  # noqa: E402
from neuroplug.population.lowrank import lowrank_for  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402
from neuroplug.tools.watch import watch  # noqa: E402

QWEN2 = {
    "model_type": "qwen2", "vocab_size": 14, "hidden_size": 32, "intermediate_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 64, "tie_word_embeddings": True,
}  # fmt: skip
GPT2 = {
    "model_type": "gpt2", "vocab_size": 14, "n_embd": 32, "n_layer": 2, "n_head": 4,
    "n_positions": 16,
}  # fmt: skip


@pytest.mark.parametrize("config", [QWEN2, GPT2], ids=["qwen2", "gpt2"])
@pytest.mark.parametrize("cache", [True, False], ids=["kv cache", "whole context"])
def test_a_low_rank_population_of_a_transformers_model_runs_factored_as_materialised(cache, config):
    from neuroplug_backends.module_lowrank import FactoredModule, factored_module

    network = PretrainedLMNetwork((9,), 14, {"config": config, "cache": cache})
    # Qwen2's Linear, Embedding and Qwen2RMSNorm layers; GPT-2's Conv1D and LayerNorm
    assert factored_module(network)
    assert "model.lm_head.weight" not in network.layout.slots  # tied: the embedding's
    generator = torch.Generator().manual_seed(0)
    population = Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(2)]),
        base_index=torch.tensor([0, 1, 0, 1, 1]),
        scale=torch.full((5,), 0.05),
        seed=torch.arange(5) + 3,
        lowrank=lowrank_for(network.layout, 2, 200),
    )
    members = torch.tensor([4, 0, 2, 2, 1, 3])
    lengths = torch.randint(1, 10, (6, 1), generator=generator)
    ids = torch.randint(1, 15, (6, 9), generator=generator) * (torch.arange(9) < lengths)
    factored = FactoredModule(network, population, torch.device("cpu"))
    materialised = population.materialize(members)
    if cache:  # a step from a cache earlier tokens wrote, and prompts read at once
        state = torch.randn(6, network.state_size, generator=generator)
        state[:, -1] = (lengths.flatten() - 1) * torch.tensor([1, 0, 1, 1, 0, 1])
        got = factored.forward(members, ids.float(), state)
        expected, expected_state = network.forward_population_with_state(
            materialised, ids.float(), state
        )
        torch.testing.assert_close(got[1], expected_state, atol=2e-5, rtol=1e-4)
        torch.testing.assert_close(got[0], expected, atol=2e-5, rtol=1e-4)
        return
    got = factored.forward(members, ids.float())
    expected = network.forward_population(materialised, ids.float())
    torch.testing.assert_close(got[0], expected, atol=2e-5, rtol=1e-4)
    alone = torch.cat(
        [network.forward_single(materialised[j], ids[j : j + 1].float()) for j in range(6)]
    )
    torch.testing.assert_close(expected, alone, atol=1e-5, rtol=1e-5)


def test_the_newest_token_s_logits_are_the_model_s_own_whatever_the_padding():
    network = PretrainedLMNetwork((9,), 14, {"config": QWEN2, "cache": False})
    params = network.initial_params(torch.Generator().manual_seed(1))
    observed = torch.tensor([[3.0, 5.0, 2.0, 0, 0, 0, 0, 0, 0]])  # ids 2, 4, 1, then padding
    tensors = {
        name.removeprefix("model."): tensor for name, tensor in network.layout.split(params).items()
    }
    alone = torch.func.functional_call(
        network.module.model, tensors, (), {"input_ids": torch.tensor([[2, 4, 1]])}
    ).logits[:, -1]
    torch.testing.assert_close(
        network.forward_single(params, observed), alone, atol=1e-5, rtol=1e-5
    )


def test_a_model_saved_with_its_tokenizer_is_evolved_and_watched(compose, tmp_path, capsys):
    saved = save_tiny_model(tmp_path / "model", "0123456789+=")
    overrides = [
        "algo=es", "env=addition", "env.kwargs.digits=1", f"env.kwargs.tokenizer={saved}",
        "net.type=pretrained_lm", f"net.kwargs.pretrained={saved}",
        "algo.perturbation=lowrank", "algo.lowrank_min_size=200", "algo.population_size=8",
        "algo.episodes_per_member=2", "run.max_generations=2", "run.eval_episodes=3",
        "logger=console", f"run.output_dir={tmp_path / 'runs'}",
    ]  # fmt: skip
    assert run_job(compose(overrides))["frames"] > 0
    assert "pretrained_lm Qwen2ForCausalLM (2 layers, width 32)" in capsys.readouterr().out
    run_dir = next((tmp_path / "runs").rglob("best_policy.pt")).parents[1]
    policy = neuroplug.load_policy(run_dir)  # the trained model leaves neuroplug, cache and all
    assert policy.recurrent and policy.state_size == 2 * 2 * 2 * 6 * 8 + 1
    context = torch.zeros(1, 6)
    context[0, 0] = 2.0  # the prompt's first token, "1"
    token, state = policy(context, policy.initial_state(1))
    assert token.shape == (1,) and 0 <= int(token) < 13 and state.abs().sum() > 0
    watch(run_dir, episodes=2)
    shown = [line for line in capsys.readouterr().out.splitlines() if line.startswith("episode")]
    assert len(shown) == 2 and all("=" in line.split("'")[1] for line in shown)


@pytest.mark.parametrize("model_type", ["qwen2", "llama", "gpt2"])
def test_a_cached_step_is_the_whole_context_s_forward(model_type):
    config = {**QWEN2, "model_type": model_type, "tie_word_embeddings": model_type == "qwen2"}
    if model_type == "gpt2":
        config = GPT2
    cached = PretrainedLMNetwork((9,), 14, {"config": config})
    whole = PretrainedLMNetwork((9,), 14, {"config": config, "cache": False})
    heads = 4 if model_type == "gpt2" else 2  # GPT-2: every head its keys and values
    assert cached.state_size == 2 * 2 * heads * 9 * 8 + 1 and whole.state_size == 0
    assert "KV cache" in cached.describe() and "whole context" in whole.describe()
    generator = torch.Generator().manual_seed(4)
    params = torch.stack([cached.initial_params(generator) for _ in range(3)])
    ids = torch.randint(1, 15, (3, 9), generator=generator)
    state = torch.zeros(3, cached.state_size)
    prompts = torch.tensor([1, 4, 7])  # read at once, then a token a step
    for step in range(9):
        shown = (ids * (torch.arange(9) < (prompts + step).unsqueeze(1))).float()
        stepped, state = cached.forward_population_with_state(params, shown, state)
        expected = whole.forward_population(params, shown)
        torch.testing.assert_close(stepped, expected, atol=2e-5, rtol=1e-4)


def test_its_settings_and_files_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"net.kwargs.pretrained: neither a directory nor"):
        PretrainedLMSettings()
    with pytest.raises(ConfigError, match=r"net.kwargs.config.model_type: missing"):
        PretrainedLMSettings(config={"hidden_size": 8})
    with pytest.raises(ConfigError, match=r"net.kwargs.pretrained: no causal language model"):
        PretrainedLMNetwork((9,), 14, {"pretrained": str(tmp_path)})
    with pytest.raises(ConfigError, match=r"env.kwargs.tokenizer: the tokenizer has 20 ids"):
        PretrainedLMNetwork((9,), 20, {"config": QWEN2})
    opt = {
        "model_type": "opt", "vocab_size": 14, "hidden_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "ffn_dim": 32, "word_embed_proj_dim": 16,
    }  # fmt: skip
    with pytest.raises(ConfigError, match=r"net.kwargs.cache: a opt model's step is not"):
        PretrainedLMNetwork((9,), 14, {"config": opt, "cache": True})
    assert PretrainedLMNetwork((9,), 14, {"config": opt}).state_size == 0  # runs whole
    short = {**GPT2, "n_positions": 4}
    with pytest.raises(ConfigError, match=r"its positions, 4, fewer than the context's 9"):
        PretrainedLMNetwork((9,), 14, {"config": short, "cache": True})
    assert PretrainedLMNetwork((9,), 14, {"config": short}).state_size == 0


def test_its_constants_go_where_its_forward_runs():
    network = PretrainedLMNetwork((9,), 14, {"config": QWEN2})
    buffers = dict(network.module.named_buffers())
    assert buffers  # the rotary embedding's frequencies
    parameters_before = {t.device for t in network.module.parameters()}
    network.place_constants(torch.device("meta"))
    assert {t.device.type for t in network.module.buffers()} == {"meta"}
    assert {t.device for t in network.module.parameters()} == parameters_before
