"""A tiny Hugging Face causal LM and its character tokenizer saved in a directory, as
``save_pretrained`` leaves a model a user trained (for the tests only; nothing downloaded)."""

from __future__ import annotations

from pathlib import Path

END = "</s>"


def save_tiny_model(path: Path, alphabet: str, seed: int = 0) -> Path:
    """A 2-layer Qwen2 of width 32 with a character-level tokenizer of ``alphabet`` plus an
    end-of-sequence token, saved in ``path``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    vocabulary = {END: 0, **{c: i + 1 for i, c in enumerate(alphabet)}}
    core = Tokenizer(models.WordLevel(vocabulary, unk_token=END))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=END, pad_token=END, unk_token=END
    )
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        tie_word_embeddings=True, eos_token_id=0, pad_token_id=0,
    )  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
