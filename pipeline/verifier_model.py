"""ravbot's own verifier model: a MiniLM cross-encoder (LoRA adapter + 3-way head) that reads claim and evidence together.

`load_verifier(path)` applies the adapter in `path` (default: the shipped pipeline/models/verifier)
over the installed all-MiniLM-L6-v2 weights, offline, and caches the result; `TrainedVerifier(path)`
is the not-yet-loaded one verification is given (chosen by `bot.app.build_verifier`); `VerifierModel.predict`
scores (claim, evidence) pairs in batches and returns temperature-scaled probabilities in the
order of `LABELS`: [supports, refutes, not enough info]. Training lives in `lab.train_verifier`.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

VERIFIER_DIR = Path(__file__).resolve().parent / "models" / "verifier"
LABELS = ("supports", "refutes", "nei")
MAX_LENGTH = 128
# LoRA on the encoder's attention and feed-forward projections (not the pooler, which is trained whole).
TARGET_MODULES = r".*encoder\.layer\.\d+\..*(query|key|value|dense)$"
MODULES_TO_SAVE = ["classifier", "pooler"]


def build_model(base_path: str, rank: int = 8, alpha: int = 16, dropout: float = 0.1, seed: int = 0) -> tuple[Any, Any]:
    """A fresh (tokenizer, peft model): MiniLM from `base_path` with a 3-label head and LoRA adapters."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_path, local_files_only=True)
    base = AutoModelForSequenceClassification.from_pretrained(
        base_path, num_labels=len(LABELS), local_files_only=True,
        id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)},
    )
    config = LoraConfig(
        r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=TARGET_MODULES,
        modules_to_save=MODULES_TO_SAVE, task_type="SEQ_CLS",
    )
    return tokenizer, get_peft_model(base, config)


def _load_adapter(folder: str, trainable: bool, seed: int) -> tuple[Any, Any]:
    """(tokenizer, peft model): the adapter and head in `folder` over the installed MiniLM."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from pipeline.embed import default_model_path

    torch.manual_seed(seed)
    base_path = default_model_path()
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the fresh head is "missing" from the base checkpoint by design
    try:
        tokenizer = AutoTokenizer.from_pretrained(base_path, local_files_only=True)
        base = AutoModelForSequenceClassification.from_pretrained(
            base_path, num_labels=len(LABELS), local_files_only=True,
            id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)},
        )
        model = PeftModel.from_pretrained(base, folder, is_trainable=trainable)
    finally:
        hf_logging.set_verbosity(verbosity)
    if trainable:
        model.train()
        return tokenizer, model
    # For inference the adapter is folded into the base weights: the same function, without the
    # LoRA layers' extra matrix products on every forward pass (about a third of the model's time).
    model = model.merge_and_unload()
    model.eval()
    return tokenizer, model


def load_trainable(path: str, seed: int = 0) -> tuple[Any, Any]:
    """(tokenizer, peft model) with the adapter and head in `path` loaded trainable, to continue training it."""
    if not available(path):
        raise ValueError(f"init {path!r} has no trained verifier (manifest.json + adapter files expected)")
    return _load_adapter(str(path), trainable=True, seed=seed)


def encode(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict:
    """Tokenised batch: claim first, evidence second, evidence truncated first beyond MAX_LENGTH."""
    return tokenizer(
        [c for c, _ in pairs], [e for _, e in pairs], truncation="only_second" if pairs else True,
        max_length=MAX_LENGTH, padding=True, return_tensors="pt",
    )


def safe_encode(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict:
    """`encode`, or, for a claim too long to truncate only the evidence, both sides truncated."""
    try:
        return encode(tokenizer, pairs)
    except Exception:  # noqa: BLE001 - a claim longer than MAX_LENGTH cannot be truncated "only_second"
        return tokenizer([c for c, _ in pairs], [e for _, e in pairs], truncation="longest_first",
                         max_length=MAX_LENGTH, padding=True, return_tensors="pt")


class VerifierModel:
    """A loaded verifier (owns the torch model): `predict` pairs → (n, 3) probabilities."""

    def __init__(self, tokenizer: Any, model: Any, temperature: float, manifest: dict):
        self.tokenizer = tokenizer
        self.model = model
        self.temperature = float(temperature)
        self.manifest = manifest
        self._lock = threading.Lock()

    def logits(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Raw (untempered) logits, in batches sorted by length for speed."""
        import torch

        if not pairs:
            return np.zeros((0, len(LABELS)), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = safe_encode(self.tokenizer, [pairs[i] for i in idx])
                out[idx] = self.model(**batch).logits.float().numpy()
        return out

    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Temperature-scaled probabilities [supports, refutes, nei] per (claim, evidence) pair."""
        return softmax(self.logits(pairs, batch_size) / self.temperature)


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def available(path: str = "") -> bool:
    """Whether a trained verifier exists at `path` (default: the shipped one)."""
    folder = Path(path).expanduser() if path else VERIFIER_DIR
    return (folder / "manifest.json").is_file() and (folder / "adapter_config.json").is_file()


@dataclass(frozen=True)
class TrainedVerifier:
    """The verifier in `path` (empty: the shipped one, if any), loaded on first use: what
    `pipeline.verify` is given (built by `bot.app.build_verifier`)."""

    path: str

    def available(self) -> bool:
        return available(self.path)

    def load(self) -> VerifierModel | None:
        """The loaded verifier (cached per process), or None when no path is given and none is
        shipped; ValueError naming a given path that holds no trained verifier."""
        if self.path and not self.available():
            raise ValueError(f"verifier_model {self.path!r} has no trained verifier (manifest.json + adapter files expected)")
        return load_verifier(self.path) if self.available() else None


@functools.cache
def load_verifier(path: str = "") -> VerifierModel:
    """The verifier in `path` (default: the shipped one) applied over the installed MiniLM; cached."""
    return read_verifier(path)


def read_verifier(path: str = "") -> VerifierModel:
    """`load_verifier` without the cache: the files in `path` as they are now (for training)."""
    folder = Path(path).expanduser() if path else VERIFIER_DIR
    if not available(str(folder)):
        raise ValueError(f"verifier_model {str(folder)!r} has no trained verifier (manifest.json + adapter files expected)")
    manifest = json.loads((folder / "manifest.json").read_text())
    tokenizer, model = _load_adapter(str(folder), trainable=False, seed=0)
    return VerifierModel(tokenizer, model, float(manifest.get("temperature", 1.0)), manifest)
