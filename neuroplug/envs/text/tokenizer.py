"""Tokenizers of text tasks: the character-level one neuroplug ships, and a model's own
(a Hugging Face tokenizer saved in a local directory).

Both give ids from 0 (``vocabulary`` of them) and name the id that ends a completion
(``end``). The env shows a context as ids + 1, so that 0 can pad its unused places
whatever a tokenizer's ids are (:mod:`neuroplug.envs.text.env`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from neuroplug.errors import ConfigError


class Tokenizer(Protocol):
    """What a text task's env needs of a tokenizer."""

    vocabulary: int
    """Ids: 0 .. vocabulary - 1."""
    end: int
    """The id that ends a completion."""

    def encode(self, text: str) -> list[int]:
        """``text``'s ids (no special tokens added)."""

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids`` up to the first end."""

    def missing(self, text: Iterable[str]) -> str:
        """The characters of ``text`` it cannot write back as they are (each once, in order)."""


class CharTokenizer:
    """Id 0 ends a completion; the characters of ``alphabet`` are ids ``1 ..
    len(alphabet)`` in its order."""

    end = 0

    def __init__(self, alphabet: str) -> None:
        ordered = "".join(dict.fromkeys(alphabet))  # each character once, first place kept
        if not ordered:
            raise ConfigError("env.kwargs.alphabet", "an empty alphabet", "a string of characters")
        self.alphabet = ordered
        self.ids = {character: 1 + i for i, character in enumerate(ordered)}
        self.vocabulary = 1 + len(ordered)

    def missing(self, text: Iterable[str]) -> str:
        return "".join(dict.fromkeys(c for c in text if c not in self.ids))

    def encode(self, text: str) -> list[int]:
        missing = self.missing(text)
        if missing:
            raise ValueError(f"cannot encode {missing!r}: not in the alphabet {self.alphabet!r}")
        return [self.ids[c] for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        characters = []
        for token in ids:
            token = int(token)
            if token == self.end:
                break
            if 1 <= token <= len(self.alphabet):
                characters.append(self.alphabet[token - 1])
        return "".join(characters)


class PretrainedTokenizer:
    """A Hugging Face tokenizer saved with ``save_pretrained`` in ``path`` (a model's own:
    ``transformers`` reads it; nothing is downloaded). Its end-of-sequence token ends a
    completion."""

    def __init__(self, path: str) -> None:
        try:
            from transformers import AutoTokenizer
        except ImportError as error:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"a model's own tokenizer needs transformers ({error})",
                "pip install 'neuroplug[hf]', or no tokenizer (the character one)",
            ) from None
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as error:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"no tokenizer could be read from {path!r} ({str(error).splitlines()[0]})",
                "a local directory a tokenizer was saved in (save_pretrained)",
            ) from None
        if self.tokenizer.eos_token_id is None:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"the tokenizer in {path!r} has no end-of-sequence token to end a completion",
                "a tokenizer with an eos_token",
            )
        self.end = int(self.tokenizer.eos_token_id)
        self.vocabulary = len(self.tokenizer)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Iterable[int]) -> str:
        kept = []
        for token in ids:
            if int(token) == self.end:
                break
            kept.append(int(token))
        return self.tokenizer.decode(kept, skip_special_tokens=True)

    def missing(self, text: Iterable[str]) -> str:
        return "".join(dict.fromkeys(c for c in text if self.decode(self.encode(c)) != c))


def make_tokenizer(path: str, alphabet: str) -> Tokenizer:
    """The tokenizer saved in ``path``, or without one the character tokenizer of
    ``alphabet``."""
    return PretrainedTokenizer(path) if path else CharTokenizer(alphabet)
