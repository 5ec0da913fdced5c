"""A byte-level tokenizer: every byte is a token, plus PAD, BOS and EOS, so any text encodes without a vocabulary file."""
from __future__ import annotations

from collections.abc import Iterable

PAD = 256
BOS = 257
EOS = 258
VOCAB_SIZE = 259


class ByteTokenizer:
    """UTF-8 bytes as ids 0..255; PAD, BOS and EOS after them (the tiny models' vocabulary of 259)."""

    vocab_size = VOCAB_SIZE
    pad_id, bos_id, eos_id = PAD, BOS, EOS

    def encode(self, text: str, bos: bool = True) -> list[int]:
        """The UTF-8 bytes of `text` as ids, after a BOS id when `bos` is true."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__}; decode bytes first or pass text")
        return ([BOS] if bos else []) + list(text.encode("utf-8"))

    def decode(self, ids: Iterable[int]) -> str:
        """The text of `ids`: PAD, BOS and EOS are skipped, and invalid UTF-8 (a cut multi-byte char) becomes U+FFFD."""
        out = bytearray()
        for i in ids:
            i = int(i)
            if not 0 <= i < VOCAB_SIZE:
                raise ValueError(f"token id {i} is outside the vocabulary 0..{VOCAB_SIZE - 1}")
            if i < 256:
                out.append(i)
        return out.decode("utf-8", errors="replace")
