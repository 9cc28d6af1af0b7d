"""ravbot's own verifier model: a MiniLM cross-encoder (LoRA adapter + 3-way head) that reads claim and evidence together.

`load_verifier(path, backend)` applies the adapter in `path` (default: the shipped pipeline/models/verifier)
over the installed all-MiniLM-L6-v2 weights, offline, and caches the result; with the `onnx` backend
the merged model is exported once to ONNX and run by ONNX Runtime; `torch-bf16` runs torch's matrix
products in bfloat16; `auto` is `torch-bf16` where the CPU multiplies bfloat16 natively, else `onnx`; `TrainedVerifier(path)`
is the not-yet-loaded one verification is given (chosen by `bot.app.build_verifier`); `VerifierModel.predict`
scores (claim, evidence) pairs in batches and returns temperature-scaled probabilities in the
order of `LABELS`: [supports, refutes, not enough info]. Training lives in `lab.train_verifier`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

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


def encode(tokenizer: Any, pairs: Sequence[tuple[str, str]], tensors: str = "pt") -> dict:
    """Tokenised batch: claim first, evidence second, evidence truncated first beyond MAX_LENGTH
    (`tensors`: "pt" for torch, "np" for ONNX Runtime)."""
    return tokenizer(
        [c for c, _ in pairs], [e for _, e in pairs], truncation="only_second" if pairs else True,
        max_length=MAX_LENGTH, padding=True, return_tensors=tensors,
    )


def safe_encode(tokenizer: Any, pairs: Sequence[tuple[str, str]], tensors: str = "pt") -> dict:
    """`encode`, or, for a claim too long to truncate only the evidence, both sides truncated."""
    try:
        return encode(tokenizer, pairs, tensors)
    except Exception:  # noqa: BLE001 - a claim longer than MAX_LENGTH cannot be truncated "only_second"
        return tokenizer([c for c, _ in pairs], [e for _, e in pairs], truncation="longest_first",
                         max_length=MAX_LENGTH, padding=True, return_tensors=tensors)


class VerifierModel:
    """A loaded verifier (owns the torch model, or the ONNX Runtime session run in its place):
    `predict` pairs → (n, 3) probabilities."""

    def __init__(self, tokenizer: Any, model: Any, temperature: float, manifest: dict, session: Any = None,
                 bf16: bool = False):
        self.tokenizer = tokenizer
        self.model = model  # None when `session` runs the model
        self.session = session
        self.temperature = float(temperature)
        self.manifest = manifest
        self.bf16 = bf16 and session is None  # torch's matrix products in bfloat16 (autocast)
        self.backend = "onnx" if session is not None else "torch-bf16" if self.bf16 else "torch"
        self._lock = threading.Lock()

    def logits(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Raw (untempered) logits, in batches sorted by length for speed. Under ONNX Runtime one pair
        runs at a time: with no padding that was fastest (2 threads, 594 answer-check pairs: 27.2 ms a
        pair, 30.1 in fours; torch 37.0 in fours, 47.6 one by one). On a CPU with AMX, bfloat16
        torch in fours took 8.2 ms a pair against ONNX Runtime's 12.7 (200 pairs, 2 threads), its
        probabilities within 0.006 of float32's."""
        if not pairs:
            return np.zeros((0, len(LABELS)), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
        if self.session is not None:
            names = [i.name for i in self.session.get_inputs()]
            with self._lock:
                for i in order:
                    batch = safe_encode(self.tokenizer, [pairs[i]], tensors="np")
                    out[i] = self.session.run(None, {k: np.asarray(batch[k], dtype=np.int64) for k in names})[0][0]
            return out
        import torch

        from pipeline.embed import bf16_autocast

        with self._lock, torch.inference_mode(), bf16_autocast(self.bf16):
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


BACKENDS = ("auto", "onnx", "torch", "torch-bf16")
# (claim, evidence) pairs an ONNX export must score as torch does before it is used
_EXPORT_CHECK = (("Backups are kept for 30 days.", "Backups are kept for thirty days on the storage server."),
                 ("The client retries twice.", "The client never retries a failed request."),
                 ("Short.", "A longer piece of evidence about something else entirely, to vary the length."))


@dataclass(frozen=True)
class TrainedVerifier:
    """The verifier in `path` (empty: the shipped one, if any), loaded on first use: what
    `pipeline.verify` is given (built by `bot.app.build_verifier`). `backend`: `onnx` (exported once
    into `cache_dir`, run by ONNX Runtime), `torch`, `torch-bf16`, or `auto` (see `load_verifier`)."""

    path: str
    backend: str = "torch"
    cache_dir: str = ""

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown verifier backend {self.backend!r}; expected one of {', '.join(BACKENDS)}")

    def available(self) -> bool:
        return available(self.path)

    def running(self) -> str:
        """The backend the loaded verifier runs on ("onnx", "torch-bf16", or "torch" after a fallback);
        "" before it loads."""
        loaded = _loaded.get((self.path, self.backend))
        return loaded.backend if loaded else ""

    def load(self) -> VerifierModel | None:
        """The loaded verifier (cached per process), or None when no path is given and none is
        shipped; ValueError naming a given path that holds no trained verifier."""
        if self.path and not self.available():
            raise ValueError(f"verifier_model {self.path!r} has no trained verifier (manifest.json + adapter files expected)")
        return load_verifier(self.path, self.backend, self.cache_dir) if self.available() else None


_loaded: dict[tuple[str, str], VerifierModel] = {}
_loaded_lock = threading.Lock()


def load_verifier(path: str = "", backend: str = "torch", cache_dir: str = "") -> VerifierModel:
    """The verifier in `path` (default: the shipped one) applied over the installed MiniLM, run by
    `backend`; one per (path, backend) per process. `onnx` reads its export from `cache_dir` (written
    there, checked against torch, the first time); when ONNX Runtime or the export fails, the torch
    model runs, with a warning (`VerifierModel.backend` says which runs). `auto` runs `torch-bf16`
    where the CPU multiplies bfloat16 natively (`pipeline.embed.bf16_native`), else `onnx`."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown verifier backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    with _loaded_lock:
        if (path, backend) not in _loaded:
            runs = backend
            if backend == "auto":
                from pipeline.embed import bf16_native

                runs = "torch-bf16" if bf16_native() else "onnx"
            verifier = None
            if runs == "onnx":
                try:
                    verifier = _read_onnx(path, Path(cache_dir or Path(".ravbot") / "models"))
                except Exception as e:  # noqa: BLE001 - any failure: the torch model still works
                    log.warning("verifier backend onnx unavailable (%s); using torch", e)
            _loaded[(path, backend)] = verifier or read_verifier(path, bf16=runs == "torch-bf16")
        return _loaded[(path, backend)]


def read_verifier(path: str = "", bf16: bool = False) -> VerifierModel:
    """The torch verifier in `path`, without the cache: the files as they are now (for training);
    `bf16`: its matrix products in bfloat16."""
    from pipeline.embed import onednn_cache

    onednn_cache(bf16)
    folder, manifest = _verifier_files(path)
    tokenizer, model = _load_adapter(str(folder), trainable=False, seed=0)
    return VerifierModel(tokenizer, model, float(manifest.get("temperature", 1.0)), manifest, bf16=bf16)


def _verifier_files(path: str) -> tuple[Path, dict]:
    """The folder of the verifier in `path` (empty: the shipped one) and its manifest; ValueError
    naming a folder without a trained verifier."""
    folder = Path(path).expanduser() if path else VERIFIER_DIR
    if not available(str(folder)):
        raise ValueError(f"verifier_model {str(folder)!r} has no trained verifier (manifest.json + adapter files expected)")
    return folder, json.loads((folder / "manifest.json").read_text())


def _read_onnx(path: str, cache_dir: Path) -> VerifierModel:
    """The verifier run by ONNX Runtime from its export in `cache_dir`; the export is made (and
    checked against the torch model's logits) when missing, and made again, once, when it does not
    load (damaged on disk). An existing export loads without torch's model."""
    import onnxruntime  # noqa: F401 - missing, it fails here, before any export
    from transformers import AutoTokenizer

    from pipeline.embed import _model_key, default_model_path, onnx_session

    folder, manifest = _verifier_files(path)
    # each key names a folder's files, the sequence length, the ONNX opset and the torch version
    target = cache_dir / f"verifier-{_model_key(default_model_path(), MAX_LENGTH)}-{_model_key(str(folder), MAX_LENGTH)}.onnx"
    fresh = not target.exists()
    if fresh:
        _export(read_verifier(str(folder)), target)
    try:
        session = onnx_session(target)
    except Exception as e:  # noqa: BLE001 - an export damaged on disk is made again, once
        if fresh:
            raise
        log.warning("the verifier's ONNX export %s does not load (%s); exporting it again", target, e)
        target.unlink(missing_ok=True)
        _export(read_verifier(str(folder)), target)
        session = onnx_session(target)
    tokenizer = AutoTokenizer.from_pretrained(default_model_path(), local_files_only=True)
    return VerifierModel(tokenizer, None, float(manifest.get("temperature", 1.0)), manifest, session)


def _export(verifier: VerifierModel, target: Path) -> None:
    """Export the torch verifier (token ids → logits) to `target`, atomically, once its logits match
    torch's on `_EXPORT_CHECK` (ValueError otherwise)."""
    import onnxruntime as ort
    import torch

    from pipeline.embed import ONNX_OPSET

    target.parent.mkdir(parents=True, exist_ok=True)
    enc = encode(verifier.tokenizer, _EXPORT_CHECK[:2])
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(names, args, strict=True))).logits

    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on shape tests, constant for an encoder
        torch.onnx.export(Logits(verifier.model).eval(), tuple(enc[k] for k in names), str(tmp), dynamo=False,
                          input_names=names, output_names=["logits"],
                          dynamic_axes={k: {0: "batch", 1: "sequence"} for k in names} | {"logits": {0: "batch"}},
                          opset_version=ONNX_OPSET, do_constant_folding=True)
    session = ort.InferenceSession(str(tmp), providers=["CPUExecutionProvider"])
    check = VerifierModel(verifier.tokenizer, None, verifier.temperature, verifier.manifest, session)
    gap = float(np.abs(check.logits(list(_EXPORT_CHECK)) - verifier.logits(list(_EXPORT_CHECK))).max())
    if gap > 1e-3:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"the ONNX export of the verifier gives other logits than torch (by {gap:.2g})")
    os.replace(tmp, target)
    log.info("exported the verifier model to %s", target)
