"""Embedding backends (auto, torch, torch-bf16, torch-int8, onnx), the fallback to torch, and one encode at a time."""

from __future__ import annotations

import logging
import sys
import threading

import numpy as np
import pytest

import pipeline.embed
from pipeline.embed import Embedder, load_embedder, same_vectors

TEXTS = [
    "Salaries are paid on the last working day of each month.",
    "Every employee has twenty-five days of annual leave, which must be requested at least two weeks "
    "in advance through the HR portal, and up to five unused days can be carried over to the next year.",
    "The VPN must be used on public Wi-Fi.",
    "   Lunch is served at noon in the canteen.  ",
    "Queries are served by two replicas behind a load balancer; the search index is rebuilt overnight. " * 12,
]


def test_an_unknown_backend_is_refused_by_name():
    with pytest.raises(ValueError, match="tensorrt"):
        Embedder("", "tensorrt")


class _FakeModel:
    """Stands in for a SentenceTransformer: records how many encode calls run at once."""

    def __init__(self):
        self.inside = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def encode(self, texts, **_):
        self.calls += 1
        if self.calls == 1:  # the first call holds on until the test lets it go
            self.inside.set()
            assert self.release.wait(10)
        return np.ones((len(texts), 4), dtype=np.float32)


def test_two_embedders_never_encode_at_the_same_time():
    first, second = Embedder("a"), Embedder("b")
    model = _FakeModel()
    for e in (first, second):
        e._model, e.backend_used = model, "torch"
    entered_second = threading.Event()

    def run_second():
        second.encode(["y"])
        entered_second.set()

    a = threading.Thread(target=first.encode, args=(["x"],))
    a.start()
    assert model.inside.wait(10)
    b = threading.Thread(target=run_second)
    b.start()
    assert not entered_second.wait(0.3)  # the second encode waits for the first
    assert model.calls == 1
    model.release.set()
    a.join(10)
    b.join(10)
    assert entered_second.is_set() and model.calls == 2


@pytest.fixture(scope="module")
def torch_vectors():
    """The vectors of the model as shipped, in float32."""
    return load_embedder("", "torch").encode(TEXTS)


def test_bf16_gives_torch_vectors_to_rounding(torch_vectors):
    e = Embedder("", "torch-bf16")
    got = e.encode(TEXTS)
    assert e.backend_used == "torch-bf16"
    assert got.dtype == np.float32 and got.shape == torch_vectors.shape
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(got * torch_vectors, axis=1)) > 0.9999


@pytest.mark.parametrize(("n", "padded"), [(1, 16), (16, 16), (17, 32), (100, 112), (128, 128), (129, 160),
                                           (160, 160), (250, 256), (256, 256)])
def test_padded_length_is_a_multiple_of_16_for_short_batches_and_of_32_beyond(n, padded):
    assert pipeline.embed.padded_length(n) == padded


def test_padded_lengths_are_few():
    assert len({pipeline.embed.padded_length(n) for n in range(1, 257)}) == 12


def test_bf16_pads_each_batch_to_its_padded_length_and_keeps_the_vectors():
    e = Embedder("", "torch-bf16")
    lengths = []
    e.model[0].register_forward_pre_hook(lambda _m, args: lengths.append(args[0]["input_ids"].shape[1]))
    padded = e.encode(TEXTS, batch_size=2)
    assert lengths and all(pipeline.embed.padded_length(n) == n for n in lengths)
    e.model[0]._forward_pre_hooks.clear()  # the same model, every hook off: each batch at its own length
    lengths.clear()
    e.model[0].register_forward_pre_hook(lambda _m, args: lengths.append(args[0]["input_ids"].shape[1]))
    plain = e.encode(TEXTS, batch_size=2)
    assert any(pipeline.embed.padded_length(n) != n for n in lengths)
    assert np.min(np.sum(padded * plain, axis=1)) > 0.9999  # bfloat16 rounds a little differently per shape


@pytest.mark.parametrize(("native", "runs"), [(True, "torch-bf16"), (False, "torch")])
def test_auto_runs_bf16_only_where_the_cpu_multiplies_it_natively(monkeypatch, torch_vectors, native, runs):
    monkeypatch.setattr(pipeline.embed, "bf16_native", lambda: native)
    e = Embedder("", "auto")
    got = e.encode(TEXTS[:2])
    assert e.backend_used == runs
    assert np.min(np.sum(got * torch_vectors[:2], axis=1)) > 0.9999


def test_bf16_and_auto_file_their_vectors_as_torch_and_int8_apart():
    assert same_vectors("auto") == same_vectors("torch-bf16") == same_vectors("torch") == "torch"
    assert same_vectors("torch-int8") == "torch-int8" and same_vectors("onnx") == "onnx"


def test_onnx_is_exported_once_and_gives_the_torch_vectors(tmp_path, torch_vectors, monkeypatch):
    pytest.importorskip("onnxruntime")
    e = Embedder("", "onnx", tmp_path)
    got = e.encode(TEXTS, batch_size=2)  # batches of other lengths than the export's
    assert e.backend_used == "onnx"
    assert got.dtype == np.float32 and got.shape == torch_vectors.shape
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.min(np.sum(got * torch_vectors, axis=1)) > 0.9999
    exported = list(tmp_path.glob("*.onnx"))
    assert len(exported) == 1

    def no_export(*_):
        raise AssertionError("exported again")

    monkeypatch.setattr(pipeline.embed, "_export", no_export)
    again = Embedder("", "onnx", tmp_path)
    np.testing.assert_allclose(again.encode(TEXTS[:1]), got[:1], atol=1e-5)
    assert again.backend_used == "onnx"


def test_int8_vectors_stay_close_to_torch_and_rank_alike(torch_vectors):
    e = Embedder("", "torch-int8")
    got = e.encode(TEXTS)
    assert e.backend_used == "torch-int8"
    assert np.min(np.sum(got * torch_vectors, axis=1)) > 0.95
    query = "How many days of holiday do I get?"
    ranked = [np.argsort(-(vectors @ model.encode([query])[0])) for vectors, model in
              ((torch_vectors, load_embedder("", "torch")), (got, e))]
    assert ranked[0][0] == ranked[1][0] == 1


def test_a_backend_that_cannot_load_falls_back_to_torch_with_a_warning(tmp_path, torch_vectors, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    e = Embedder("", "onnx", tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipeline.embed"):
        got = e.encode(TEXTS[:2])
    assert e.backend_used == "torch"
    assert "onnx unavailable" in caplog.text
    np.testing.assert_allclose(got, torch_vectors[:2], atol=1e-5)


def test_load_embedder_shares_one_torch_embedder_whatever_the_cache_dir(tmp_path):
    assert load_embedder("", "torch", str(tmp_path)) is load_embedder("", "torch")
    assert load_embedder("", "auto", str(tmp_path)) is load_embedder("", "auto")
    assert load_embedder("", "onnx", str(tmp_path)) is not load_embedder("", "onnx", str(tmp_path / "other"))


class _CountingModel:
    """Stands in for a SentenceTransformer: one distinct row per text, and a record of what it embedded."""

    def __init__(self):
        self.seen: list[str] = []

    def encode(self, texts, **_):
        self.seen.extend(texts)
        return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)


def test_the_sentence_cache_embeds_a_sentence_once_and_forgets_the_oldest():
    embedder = Embedder("a", sentence_cache=2)
    embedder._model, embedder.backend_used = _CountingModel(), "torch"
    first = embedder.encode_cached(["one", "three", "one"])
    assert embedder._model.seen == ["one", "three"]  # each distinct text once
    assert first.shape == (3, 4) and first[0][0] == 3 and first[1][0] == 5 and (first[2] == first[0]).all()
    embedder.encode_cached(["three", "eleven"])  # "three" is cached; "eleven" pushes out "one", the oldest
    assert embedder._model.seen == ["one", "three", "eleven"]
    embedder.encode_cached(["one"])
    assert embedder._model.seen == ["one", "three", "eleven", "one"]


def test_without_a_sentence_cache_every_call_embeds():
    embedder = Embedder("a")
    embedder._model, embedder.backend_used = _CountingModel(), "torch"
    embedder.encode_cached(["one"])
    embedder.encode_cached(["one"])
    assert embedder._model.seen == ["one", "one"]
    with pytest.raises(ValueError, match="sentence_cache"):
        Embedder("a", sentence_cache=-1)
