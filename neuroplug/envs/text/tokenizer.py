"""The character-level tokenizer text tasks ship with: one token per character, and two
of its own (padding and the end of a completion)."""

from __future__ import annotations

from collections.abc import Iterable

from neuroplug.errors import ConfigError

PAD = 0
"""The id of padding: the context's unused places (never a character)."""
END = 1
"""The id that ends a completion."""
FIRST_CHARACTER = 2
"""The id of the alphabet's first character."""


class CharTokenizer:
    """Characters of ``alphabet`` to ids ``2 .. 1 + len(alphabet)`` in its order (0 pads, 1
    ends a completion)."""

    def __init__(self, alphabet: str) -> None:
        ordered = "".join(dict.fromkeys(alphabet))  # each character once, first place kept
        if not ordered:
            raise ConfigError("env.kwargs.alphabet", "an empty alphabet", "a string of characters")
        self.alphabet = ordered
        self.ids = {character: FIRST_CHARACTER + i for i, character in enumerate(ordered)}

    @property
    def vocabulary(self) -> int:
        """Tokens: the characters, padding and the end."""
        return FIRST_CHARACTER + len(self.alphabet)

    def missing(self, text: Iterable[str]) -> str:
        """The characters of ``text`` this tokenizer cannot encode (each once, in order)."""
        return "".join(dict.fromkeys(c for c in text if c not in self.ids))

    def encode(self, text: str) -> list[int]:
        """``text``'s ids (a ValueError names the characters outside the alphabet)."""
        missing = self.missing(text)
        if missing:
            raise ValueError(f"cannot encode {missing!r}: not in the alphabet {self.alphabet!r}")
        return [self.ids[c] for c in text]

    def decode(self, ids: Iterable[int]) -> str:
        """The characters of ``ids``, up to the first end; padding skipped."""
        characters = []
        for token in ids:
            token = int(token)
            if token == END:
                break
            if token >= FIRST_CHARACTER and token - FIRST_CHARACTER < len(self.alphabet):
                characters.append(self.alphabet[token - FIRST_CHARACTER])
        return "".join(characters)
