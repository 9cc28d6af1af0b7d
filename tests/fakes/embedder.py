"""A deterministic stand-in for the embedding model (`pipeline.embed.Embedder`), for tests whose
assertions do not depend on the real model's semantics.

Each text becomes a hashed bag of its words and of their character trigrams (stop words dropped,
lower-cased), L2-normalised, in the real model's dimension: texts that share words have a high
cosine, texts that share none a small one, and the same text always gets the same vector, in any
process. It loads nothing, so a test using it never waits for torch or the model's weights.

Same interface as `Embedder`: `encode(texts, batch_size, progress)` → float32 rows, `dim`, `name`,
`model` (loading is a no-op), `backend_used`, `texts_encoded`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading

import numpy as np

DIM = 384  # all-MiniLM-L6-v2's
_WORD = re.compile(r"\w+")
_STOP = frozenset("""a an and are as at be by can do does did for from has have how i if in is it its
of on or that the their there this to was were what when where which who why will with you your we our
""".split())
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.35  # shared stems ("backup", "backups") count, less than a shared word
_BIAS_WEIGHT = 0.3  # a feature every text has: no zero vectors, and unrelated texts a small positive cosine


@functools.lru_cache(maxsize=65536)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """The coordinate and sign a feature adds to (stable across processes, unlike `hash`)."""
    digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return digest % dim, 1.0 if (digest >> 63) & 1 else -1.0


def features(text: str) -> dict[str, float]:
    """The weighted features of `text`: its content words and their character trigrams."""
    out: dict[str, float] = {"bias": _BIAS_WEIGHT}
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        out[f"w:{word}"] = out.get(f"w:{word}", 0.0) + _WORD_WEIGHT
        padded = f"#{word}#"
        for i in range(len(padded) - 2):
            key = f"t:{padded[i:i + 3]}"
            out[key] = out.get(key, 0.0) + _TRIGRAM_WEIGHT
    return out


class FakeEmbedder:
    """Hashed words and trigrams → unit vectors; thread-safe, nothing to load."""

    name = "fake-hashed-trigrams"
    backend = backend_used = "fake"
    loaded = True  # like `Embedder.loaded`: nothing to load

    def __init__(self, dim: int = DIM):
        self.dim = dim
        self.texts_encoded = 0  # like `Embedder.texts_encoded`: tests count what was embedded
        self._lock = threading.Lock()

    @property
    def model(self) -> FakeEmbedder:
        """What `Embedder.model` loads; here there is nothing to load."""
        return self

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for feature, weight in features(text).items():
            slot, sign = _slot(feature, self.dim)
            v[slot] += sign * weight
        return v / np.float32(np.linalg.norm(v))

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        rows = np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self.texts_encoded += len(texts)
        return rows.astype(np.float32, copy=False)

    def encode_cached(self, texts: list[str]) -> np.ndarray:
        """Like `Embedder.encode_cached` without the cache: a fake vector costs nothing to compute."""
        return self.encode(texts)
