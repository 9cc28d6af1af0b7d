"""The shipped verifier model: it loads offline, is small, and reads claim and evidence together."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bot.app import build_verifier, stage_options
from lab import train_verifier, verifier_data
from lab.metrics import binary_figures
from lab.scoring import score_pairs
from pipeline import verifier_model, verify
from pipeline.claims import extract_claims
from pipeline.types import Evidence, Label

EINSTEIN = ("Albert Einstein was born in Ulm, in the Kingdom of Württemberg, on 14 March 1879. "
            "He developed the theory of relativity while working at the Swiss patent office in Bern.")
POLAR = ("POLAR is an RFID localization system for crowded environments. "
         "It was presented at MobiCom 2021 by researchers from Tsinghua University.")
SUPPORTS, REFUTES = verifier_model.LABELS.index("supports"), verifier_model.LABELS.index("refutes")


@pytest.fixture(scope="module")
def model() -> verifier_model.VerifierModel:
    assert verifier_model.available(), f"no shipped verifier in {verifier_model.VERIFIER_DIR}"
    return verifier_model.load_verifier()


def test_shipped_artifact_is_small_and_documented():
    folder = verifier_model.VERIFIER_DIR
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size < 4_000_000, size
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["labels"] == ["supports", "refutes", "nei"]
    assert 0.3 < manifest["temperature"] < 10
    assert "perturbed/open.jsonl" in manifest["data"] and len(manifest["data"]["perturbed/open.jsonl"]) == 64
    assert not any("holdout" in f for f in manifest["data"])
    assert manifest["dev"]["mean_open_auc"] > 0.5


def test_predictions_are_probabilities_in_label_order(model):
    p = model.predict([("Einstein was born in Ulm.", EINSTEIN), ("Bananas are yellow.", EINSTEIN)])
    assert p.shape == (2, 3)
    assert np.allclose(p.sum(axis=1), 1.0, atol=1e-5) and (p >= 0).all()
    assert model.predict([]).shape == (0, 3)
    # batching and order do not change a pair's score
    again = model.predict([("Bananas are yellow.", EINSTEIN)])
    assert np.allclose(again[0], p[1], atol=1e-4)
    pairs = [("Einstein was born in Ulm.", EINSTEIN), ("POLAR was shown at MobiCom.", POLAR),
             ("He worked in Bern at the patent office, where he developed relativity.", EINSTEIN)]
    assert np.allclose(model.predict(pairs, batch_size=verify.model.MODEL_BATCH), model.predict(pairs, batch_size=64), atol=1e-4)


def test_the_model_reads_each_piece_of_evidence_once():
    # a sentence with a code fence or a short heading around it, and a code line with its closing
    # bracket, are the evidence read before them: the next distinct candidate is read instead
    candidates = [
        ("Mount('/static', app=StaticFiles(packages=['bootstrap4'])),", 3, 0.71),
        ("Mount('/static', app=StaticFiles(packages=['bootstrap4'])), ]", 3, 0.71),
        ("Mount('/static', app=StaticFiles(directory='static')),", 1, 0.57),
        ("By default `StaticFiles` will look for `statics` directory in each package.", 3, 0.55),
        ("``` By default `StaticFiles` will look for `statics` directory in each package.", 3, 0.54),
        ("StaticFiles > Packages By default StaticFiles will look for statics directory in each package.", 3, 0.53),
        ("Another sentence.", 2, 0.40),
        # a window that adds its neighbour to a sentence already read is new evidence
        ("Another sentence. Restores are tested on the storage server by the platform team.", 2, 0.39),
    ]
    chosen = verify.model.distinct(candidates, 3)
    assert [ei for _, ei in chosen] == [3, 1, 3]
    assert chosen[2][0].startswith("By default")
    assert verify.model.distinct(candidates, 4)[-1] == ("Another sentence.", 2)
    assert [t[:16] for t, _ in verify.model.distinct(candidates, 9)][3:] == ["Another sentence", "Another sentence"]
    assert verify.model.distinct([], 3) == []


def test_the_model_also_reads_the_sentence_with_most_of_the_claims_words():
    claim = "Support sessions are booked through the staff portal and last fifty minutes."
    candidates = [
        ("Support sessions are free.", 0, 0.74),
        ("Support sessions are confidential.", 0, 0.72),
        ("Staff can ask for support.", 1, 0.70),
        ("Sessions are booked through the staff portal and last fifty minutes each.", 2, 0.61),
        ("Sessions booked through the staff portal last fifty minutes, and staff follow up.", 3, 0.55),
        ("Support sessions were booked through the staff portal; the last took fifty minutes.", 4, 0.30),  # not about it
    ]
    chosen = verify.model.distinct(candidates, 3)
    read = verify.model.with_most_words(claim, candidates, chosen)
    # the first of the two that hold the most of its words, not the sentence about something else that holds them all
    assert read == [*chosen, ("Sessions are booked through the staff portal and last fifty minutes each.", 2)]
    # nothing is added when a chosen sentence holds as many words, or the claim has none
    assert verify.model.with_most_words(claim, candidates, [*chosen, read[-1]]) == [*chosen, read[-1]]
    assert verify.model.with_most_words("It is.", candidates, chosen) == chosen


def test_reads_claim_and_evidence_together(model):
    true = ("Einstein was born in Ulm in 1879.", EINSTEIN)
    negated = ("POLAR was not presented at MobiCom 2021.", POLAR)
    swapped_year = ("Einstein came into the world in Ulm in 1897.", EINSTEIN)
    unrelated = ("Bananas are yellow.", EINSTEIN)
    p = model.predict([true, negated, swapped_year, unrelated])
    assert p[0].argmax() == SUPPORTS, p[0]
    assert p[1].argmax() == REFUTES and p[2].argmax() == REFUTES, p[1:3]
    assert p[0, SUPPORTS] > 0.5 > max(p[1, SUPPORTS], p[2, SUPPORTS], p[3, SUPPORTS])
    # Known shortfall (docs/verifier.md): unrelated text often reads as "refutes" rather than "not
    # enough info", so `pipeline.verify` only lets the model contradict a claim through evidence
    # about it; the next tests cover that.


def test_unrelated_evidence_never_contradicts_through_the_model(settings, embedder, model):
    (verdict,) = score_pairs(["Bananas are yellow and grow in Ecuador."], [[EINSTEIN]], "model", embedder, settings)
    assert verdict.label is Label.UNSUPPORTED and verdict.conflict == ""


def test_model_method_quotes_the_conflict_and_passes_a_paraphrase(settings, embedder, model):
    evidence = [Evidence(EINSTEIN, title="Einstein", origin="kb"), Evidence(POLAR, title="POLAR", origin="wikipedia")]

    def judge(text: str):
        claims = extract_claims(text, settings.list("entity_types"))
        return verify.verify_claims(claims, [evidence], method="model", embedder=embedder,
                                    options=stage_options(settings).verification, verifier=build_verifier(settings))[0]

    wrong = judge("POLAR was introduced at MobiCom 2023.")
    assert (wrong.label, wrong.conflict, wrong.method) == (Label.CONTRADICTED, "2021", "model")
    assert wrong.confidence < settings.supported_threshold and "2021" in wrong.sentence
    right = judge("Einstein came into the world in the city of Ulm in 1879.")
    assert right.label is Label.SUPPORTED and right.confidence >= settings.supported_threshold, right


def test_calibration_maps_the_model_outputs_to_p_supported(model):
    spec = model.manifest["calibration"]
    assert spec["features"] == list(verify.CALIBRATION_FEATURES) and "dev split" in spec["fitted_on"]
    a = verify.Alignment("a claim", features={"cos_best": 0.8, "coverage": 1.0})
    sure, doubtful = verify.calibrated(model, a, 0.95, 0.02), verify.calibrated(model, a, 0.05, 0.9)
    assert 0.0 <= doubtful < sure <= 1.0
    z = np.dot(spec["weights"], verify.calibration_features(a, 0.95, 0.02)) + spec["bias"]
    assert sure == pytest.approx(1 / (1 + np.exp(-z)))


def test_a_missing_verifier_dir_is_named(embedder, tmp_path):
    from config.settings import load_settings

    settings = load_settings(env={}, data_dir=str(tmp_path / "data"), verifier_model=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="nowhere"):
        score_pairs(["Einstein was born in 1879."], [[EINSTEIN]], "model", embedder, settings)


def test_the_onnx_backend_gives_the_torch_probabilities_and_exports_once(model, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setattr(verifier_model, "_loaded", {})  # this test's own loads
    pairs = [("Einstein was born in Ulm.", EINSTEIN), ("Einstein was born in Bern in 1879.", EINSTEIN),
             ("POLAR was presented at MobiCom 2021.", POLAR), ("Short claim here.", POLAR)]
    onnx = verifier_model.TrainedVerifier("", "onnx", str(tmp_path)).load()
    assert onnx.backend == "onnx" and onnx.model is None  # the session runs in the torch model's place
    assert np.abs(onnx.predict(pairs) - model.predict(pairs)).max() < 1e-4
    exported = list(tmp_path.glob("verifier-*.onnx"))
    assert len(exported) == 1 and not list(tmp_path.glob("*.tmp"))
    stamp = exported[0].stat().st_mtime_ns
    monkeypatch.setattr(verifier_model, "_loaded", {})
    again = verifier_model.load_verifier("", "onnx", str(tmp_path))  # read from the export, not made again
    assert again is not onnx and exported[0].stat().st_mtime_ns == stamp
    assert np.allclose(again.predict(pairs), onnx.predict(pairs), atol=1e-6)


def test_a_damaged_onnx_export_is_made_again(model, tmp_path, monkeypatch, caplog):
    pytest.importorskip("onnxruntime")
    monkeypatch.setattr(verifier_model, "_loaded", {})
    verifier_model.load_verifier("", "onnx", str(tmp_path))
    (exported,) = tmp_path.glob("verifier-*.onnx")
    exported.write_bytes(b"not a model")  # a disk fault, a copy cut short
    monkeypatch.setattr(verifier_model, "_loaded", {})
    with caplog.at_level("WARNING"):
        again = verifier_model.load_verifier("", "onnx", str(tmp_path))
    assert again.backend == "onnx" and "exporting it again" in caplog.text
    assert exported.stat().st_size > 1_000_000
    pair = [("Einstein was born in Ulm.", EINSTEIN)]
    assert np.abs(again.predict(pair) - model.predict(pair)).max() < 1e-4


def test_without_onnx_runtime_the_torch_verifier_runs_with_a_warning(tmp_path, monkeypatch, caplog):
    import sys

    monkeypatch.setattr(verifier_model, "_loaded", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now fails
    verifier = verifier_model.TrainedVerifier("", "onnx", str(tmp_path))
    assert verifier.running() == ""
    with caplog.at_level("WARNING"):
        loaded = verifier.load()
    assert loaded.backend == "torch" and loaded.model is not None and verifier.running() == "torch"
    assert "verifier backend onnx unavailable" in caplog.text
    assert loaded.predict([("Einstein was born in Ulm.", EINSTEIN)]).shape == (1, 3)


def test_the_bf16_backend_gives_the_torch_probabilities_to_rounding(model, monkeypatch):
    monkeypatch.setattr(verifier_model, "_loaded", {})
    pairs = [("Einstein was born in Ulm.", EINSTEIN), ("Einstein was born in Bern in 1879.", EINSTEIN),
             ("POLAR was presented at MobiCom 2021.", POLAR)]
    bf16 = verifier_model.TrainedVerifier("", "torch-bf16").load()
    assert bf16.backend == "torch-bf16" and bf16.bf16
    got, want = bf16.predict(pairs), model.predict(pairs)
    assert got.dtype == np.float32 and np.abs(got - want).max() < 0.02
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()


@pytest.mark.parametrize(("native", "runs"), [(True, "torch-bf16"), (False, "onnx")])
def test_auto_runs_bf16_only_where_the_cpu_multiplies_it_natively(tmp_path, monkeypatch, native, runs):
    if runs == "onnx":
        pytest.importorskip("onnxruntime")
    import pipeline.embed

    monkeypatch.setattr(verifier_model, "_loaded", {})
    monkeypatch.setattr(pipeline.embed, "bf16_native", lambda: native)
    verifier = verifier_model.TrainedVerifier("", "auto", str(tmp_path))
    assert verifier.load().backend == runs and verifier.running() == runs


def test_an_unknown_verifier_backend_is_named():
    with pytest.raises(ValueError, match="'tensorrt'"):
        verifier_model.TrainedVerifier("", "tensorrt")


def test_training_refuses_the_holdout(tmp_path):
    with pytest.raises(ValueError, match="holdout"):
        train_verifier.train(tmp_path / "holdout", tmp_path / "out", time_budget_s=1)


def test_an_unknown_hold_out_set_is_named(tmp_path):
    with pytest.raises(ValueError, match="'wikipedia' is not one of scifact"):
        verifier_data.build_data(tmp_path, 0, hold_out="wikipedia")


def test_split_is_by_claim_and_stable():
    assert verifier_data.split_of("a claim", 0) == verifier_data.split_of("a claim", 0)
    splits = [verifier_data.split_of(f"claim {i}", 0) for i in range(2000)]
    share = {s: splits.count(s) / len(splits) for s in ("train", "dev", "test")}
    assert abs(share["dev"] - 0.10) < 0.03 and abs(share["test"] - 0.15) < 0.03


def test_contrastive_flip_changes_negation_or_direction():
    assert verifier_data.flip("Exercise reduces blood pressure.") == "Exercise increases blood pressure."
    assert verifier_data.flip("Vitamin D is not linked to asthma.") == "Vitamin D is linked to asthma."
    assert verifier_data.flip("Hello world") == ""


def test_temperature_fit_recovers_a_known_temperature():
    rng = np.random.default_rng(0)
    true_logits = rng.normal(size=(4000, 3)) * 2
    y = np.array([rng.choice(3, p=p) for p in verifier_model.softmax(true_logits)])
    assert train_verifier.fit_temperature(true_logits * 3, y) == pytest.approx(3.0, abs=0.4)


def test_binary_figures_known_values():
    # 3 true claims (2 labelled SUPPORTED), 2 false ones (1 labelled SUPPORTED)
    y = np.array([1, 1, 1, 0, 0])
    out = binary_figures(y, np.array([True, True, False, True, False]), np.array([0.9, 0.8, 0.3, 0.7, 0.1]))
    assert out["true_kept_supported"] == round(2 / 3, 3) and out["false_labelled_supported"] == 0.5
    assert out["balanced_accuracy"] == round((2 / 3 + 0.5) / 2, 3)
    assert out["precision_supported"] == round(2 / 3, 3)
    assert out["auc"] == round(5 / 6, 3)  # of 6 (true, false) pairs, only (0.3, 0.7) is misordered


CANDIDATE = verifier_model.VERIFIER_DIR.parent / "verifier-candidate"


@pytest.mark.skipif(not verifier_model.available(str(CANDIDATE)), reason="no candidate verifier in the tree")
def test_candidate_records_its_training_and_reads_an_embellishment_as_unsupported():
    manifest = json.loads((CANDIDATE / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["settings"]["authored"] is True
    assert manifest["settings"]["init"]["from"] == "verifier" and len(manifest["settings"]["init"]["adapter_sha256"]) == 64
    assert any(name.startswith("authored from docs/") for name in manifest["data"])
    assert not any("answer-check" in name or "holdout" in name for name in manifest["data"])
    assert manifest["history"] and "calibration" in manifest and manifest["test"]["sets"]["authored"]["model_raw_pair"]["n"] > 100
    candidate = verifier_model.load_verifier(str(CANDIDATE))
    evidence = "The exporter writes one file per channel."
    p = candidate.predict([("The exporter writes one file per channel.", evidence),
                           ("The exporter writes one encrypted file per channel every 5 minutes.", evidence)])
    assert p[0, SUPPORTS] > 0.5 > p[1, SUPPORTS], p
