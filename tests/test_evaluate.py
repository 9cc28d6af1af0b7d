"""The lab's evaluation (lab.datasets, metrics, perturb, runners, plots): metrics against hand-computed
values, each loader on real rows, the perturbation generator's two promises (exactly one value
changed; never the original), and the runners on tiny sets."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from lab import datasets, metrics, perturb, plots, runners
from pipeline.types import Label, Verdict

# ------------------------------------------------------------------------------------- metrics


def test_ndcg_binary_known_value():
    # relevant b (rank 2) and c (rank 3): DCG = 1/log2(3) + 1/log2(4); ideal = 1 + 1/log2(3)
    expected = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
    assert metrics.ndcg_at_k(["a", "b", "c"], {"b": 1, "c": 1}, 10) == pytest.approx(expected)
    assert expected == pytest.approx(0.6934, abs=1e-4)


def test_ndcg_graded_and_cutoff():
    # gains 1 then 2: DCG = 1 + 2/log2(3) = 2.2619; ideal order 2, 1: 2 + 1/log2(3) = 2.6309
    assert metrics.ndcg_at_k(["a", "b"], {"a": 1, "b": 2}) == pytest.approx(0.85972, abs=1e-5)
    assert metrics.ndcg_at_k(["x", "a"], {"a": 1}, k=1) == 0.0
    assert metrics.ndcg_at_k(["a"], {"a": 1}) == 1.0
    assert metrics.ndcg_at_k(["a"], {"b": 0}) == 0.0  # grade 0 is not relevant


def test_recall_and_mrr():
    ranked = ["a", "x", "b", "y"]
    rel = {"a": 1, "b": 1, "c": 1}
    assert metrics.recall_at_k(ranked, rel, 1) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(ranked, rel, 3) == pytest.approx(2 / 3)
    assert metrics.recall_at_k(ranked, rel, 100) == pytest.approx(2 / 3)
    assert metrics.mrr_at_k(["x", "y", "b"], rel, 10) == pytest.approx(1 / 3)
    assert metrics.mrr_at_k(["x", "y", "b"], rel, 2) == 0.0


def test_binary_metrics_known_values():
    gold = [True, True, True, False, False]
    pred = [True, True, False, True, False]
    m = metrics.binary_metrics(gold, pred)
    assert m["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert m["precision"] == pytest.approx(2 / 3)
    assert m["recall"] == pytest.approx(2 / 3)
    # everything predicted negative: precision 0, balanced accuracy 0.5
    assert metrics.binary_metrics([True, False], [False, False]) == {"balanced_accuracy": 0.5, "precision": 0.0, "recall": 0.0}
    with pytest.raises(ValueError, match="2 gold labels but 1"):
        metrics.binary_metrics([True, False], [True])


def test_confusion_flag_recall_percentiles():
    gold = ["supported", "refuted", "refuted", "refuted", "nei"]
    pred = ["SUPPORTED", "CONTRADICTED", "SUPPORTED", "UNCERTAIN", "UNSUPPORTED"]
    c = metrics.confusion(gold, pred)
    assert c["refuted"] == {"SUPPORTED": 1, "UNCERTAIN": 1, "UNSUPPORTED": 0, "CONTRADICTED": 1}
    assert c["supported"]["SUPPORTED"] == 1 and sum(c["nei"].values()) == 1
    assert metrics.flag_recall(gold, pred) == pytest.approx(2 / 3)
    assert metrics.flag_recall(["supported"], ["SUPPORTED"]) is None
    assert metrics.percentile([10, 20, 30, 40], 50) == pytest.approx(25)
    assert metrics.percentile([10, 20, 30, 40], 95) == pytest.approx(38.5)
    assert metrics.percentile([], 50) == 0.0
    assert metrics.first_occurrence(["d1", "d2", "d1", "d3", "d2"]) == ["d1", "d2", "d3"]


# ------------------------------------------------------------------------------------- loaders


def test_scifact_loaders(shared_data):
    d = shared_data / "scifact"
    pairs = datasets.load_pairs("scifact", d / "claims_train.jsonl")
    first = next(p for p in pairs if p.id == "2:13734012")
    assert first.label == "refuted" and first.doc_ids == ("13734012",)
    assert "493 per million" in first.evidence[0]
    assert {p.label for p in pairs} == {"supported", "refuted"}  # NEI claims have no cited evidence
    queries = datasets.load_queries(d / "claims_train.jsonl")
    assert queries["0"] == "0-dimensional biomaterials lack inductive properties."
    qrels = datasets.load_qrels(d / "qrels_train.tsv")
    assert qrels["0"] == {"31715818": 1} and "query-id" not in qrels
    corpus = datasets.load_corpus(d / "corpus.jsonl")
    title, text = corpus["4983"]
    assert title.startswith("Microstructural development") and "diffusion tensor" in text
    assert len(corpus) == 5183


def test_beir_formats(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "title": "T", "text": "Body."}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "what?"}) + "\n\n")
    (tmp_path / "qrels.tsv").write_text("q1\td1\t2\nq1\td2\t0\n")
    assert datasets.load_corpus(tmp_path / "corpus.jsonl") == {"d1": ("T", "Body.")}
    assert datasets.load_queries(tmp_path / "queries.jsonl") == {"q1": "what?"}
    assert datasets.load_qrels(tmp_path / "qrels.tsv") == {"q1": {"d1": 2, "d2": 0}}
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\nnot json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        datasets.read_jsonl(tmp_path / "bad.jsonl")
    (tmp_path / "other.jsonl").write_text('{"x": 1}\n')
    with pytest.raises(ValueError, match="doc_id"):
        datasets.load_corpus(tmp_path / "other.jsonl")


def test_verification_loaders_on_real_rows(shared_data):
    cf = datasets.load_pairs("climate-fever", shared_data / "climate-fever" / "claims.jsonl")
    assert cf[0].claim == "Global warming is driving polar bears toward extinction"
    assert cf[0].label == "nei" and cf[1].label == "supported" and len(cf[0].evidence) == 1
    assert {p.label for p in cf} == {"supported", "refuted", "nei"}

    hv = datasets.load_pairs("healthver", shared_data / "healthver" / "healthver_dev.csv")
    assert len(hv) == 1917 and hv[0].id == "224" and hv[0].label == "nei"
    assert hv[1].label == "refuted" and hv[1].claim == "Vitamin D appears increase COVID-19 mortality rates"

    cov = datasets.load_pairs("covidfact", shared_data / "covidfact" / "COVIDFACT_dataset.jsonl")
    assert cov[0].label == "supported" and cov[1].label == "refuted" and len(cov[0].evidence) == 2
    assert "chs-cov-2" in cov[1].claim

    wice = datasets.load_pairs("wice", shared_data / "wice" / "claims_dev.jsonl")
    assert wice[0].label == "partial"
    assert wice[0].evidence == ("Media Play News is the voice of the home entertainment industry.",
                                "Thomas K. Arnold, Publisher and Editorial Director, Media Play News:")
    assert {p.label for p in wice} == {"supported", "partial"}

    pert = datasets.load_pairs("perturbed", shared_data / "perturbed" / "open.jsonl")
    assert len(pert) == 716 and pert[0].label == "supported" and pert[0].perturbation == "none"
    assert {p.perturbation for p in pert if p.label == "refuted"} == {"number", "entity"}

    halu = datasets.load_halueval(shared_data / "halueval" / "qa_2000.jsonl")
    assert halu[1]["right_answer"] == "Delhi" and "Mumbai" in halu[1]["hallucinated_answer"]

    with pytest.raises(ValueError, match="unknown dataset 'fever'"):
        datasets.load_pairs("fever", shared_data / "README.md")
    with pytest.raises(ValueError, match="does not exist"):
        datasets.load_pairs("wice", shared_data / "nope.jsonl")


def test_golden_loader(tmp_path):
    f = tmp_path / "golden.jsonl"
    f.write_text(json.dumps({"question": "How do I deploy?", "relevant": ["docs/deploy.md"]}) + "\n")
    assert datasets.load_golden(f)[0]["relevant"] == ["docs/deploy.md"]
    f.write_text(json.dumps({"question": " ", "relevant": []}) + "\n")
    with pytest.raises(ValueError, match="row 1 has no question"):
        datasets.load_golden(f)
    assert runners.matches(("docs:/srv/docs/guide/setup.md", "/srv/docs/guide/setup.md", "", "docs"), "guide/setup.md")
    assert not runners.matches(("docs:/srv/docs/other.md", "/srv/docs/other.md"), "setup.md")


# -------------------------------------------------------------------------------- perturbation


def _one_span_changed(p: perturb.Perturbation) -> None:
    assert p.claim != p.original
    assert p.new != p.old and p.original[p.start:p.end] == p.old
    assert p.claim == p.original[:p.start] + p.new + p.original[p.end:]


def test_perturbation_changes_exactly_one_value_on_real_claims(shared_data):
    rows = [r for r in datasets.read_jsonl(shared_data / "perturbed" / "open.jsonl") if r["label"] == "supported"][:40]
    pool = perturb.entity_pool(r["claim"] for r in rows)
    kinds = set()
    made = 0
    for r in rows:
        p = perturb.perturb_claim(r["claim"], seed=3, evidence=r["evidence"], pool=pool)
        if p is None:
            continue
        made += 1
        kinds.add(p.kind)
        _one_span_changed(p)
        assert p.new.lower() not in " ".join(r["evidence"]).lower()  # the new value is not what the evidence says
        if p.kind in ("number", "date") and p.old.replace(",", "").replace(".", "").isdigit():
            assert p.new.replace(",", "").replace(".", "").isdigit()
        again = perturb.perturb_claim(r["claim"], seed=3, evidence=r["evidence"], pool=pool)
        assert again == p  # deterministic
    assert made >= 30 and {"number", "entity"} <= kinds


def test_perturbation_known_cases():
    p = perturb.perturb_claim("Global sea level rose 20 cm between 1901 and 2018.", seed=1)
    _one_span_changed(p)
    assert p.old in {"20", "1901", "2018"}
    assert perturb.perturb_claim("cats are rather nice animals", seed=1) is None
    # numbers inside names are not values
    for seed in range(6):
        p = perturb.perturb_claim("COVID-19 binds ACE2 receptors, as shown in 2020.", seed=seed)
        assert p.old not in {"19", "2"}
        _one_span_changed(p)
    q = perturb.perturb_claim("The dose was 2.5 mg per day.", seed=0)
    assert q.kind == "number" and q.old == "2.5" and len(q.new.split(".")[1]) == 1


@hsettings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=1, max_value=99_999), year=st.integers(min_value=1800, max_value=2030), seed=st.integers(0, 50))
def test_perturbation_property_one_number(n, year, seed):
    claim = f"In {year}, the survey counted {n:,} households in the region."
    p = perturb.perturb_claim(claim, seed=seed)
    _one_span_changed(p)
    assert p.old in {str(year), f"{n:,}"}
    assert p.kind in ("date", "number")


def test_perturbation_set_pairs_and_jsonl_round_trip(shared_data, tmp_path):
    pairs = [p for p in datasets.load_pairs("covidfact", shared_data / "covidfact" / "COVIDFACT_dataset.jsonl")
             if p.label == "supported"][:12]
    out = perturb.perturbation_set(pairs, seed=0)
    assert out and len(out) % 2 == 0
    for original, changed in zip(out[::2], out[1::2], strict=True):
        assert original.label == "supported" and changed.label == "refuted"
        assert changed.original_claim == original.claim != changed.claim
        assert changed.perturbation in {"number", "date", "entity"} and changed.evidence == original.evidence
    assert perturb.perturbation_set(pairs, seed=0) == out
    f = tmp_path / "set.jsonl"
    assert datasets.write_jsonl(f, (datasets.pair_record(p) for p in out)) == len(out)
    back = datasets.load_perturbed(f)
    assert [(p.claim, p.label, p.evidence, p.perturbation) for p in back] == [
        (p.claim, p.label, p.evidence, p.perturbation) for p in out]
    line = json.loads(f.read_text().splitlines()[1])
    assert set(line) >= {"claim", "evidence", "label", "perturbation"} and line["label"] == "refuted"


def test_changed_span_known_values():
    assert perturb.changed_span("Sea level rose 20 cm by 2018.", "Sea level rose 40 cm by 2018.") == ("20", "40")
    assert perturb.changed_span("The IPCC said so in 2007.", "The World Bank said so in 2007.") == ("IPCC", "World Bank")
    assert perturb.changed_span("The dose was 2,500 mg.", "The dose was 5,000 mg.") == ("2,500", "5,000")
    assert perturb.changed_span("same text", "same text") == ("", "")


def test_is_stated_normalises_numbers_and_names():
    evidence = ["Emissions rose by 3,500,000 tonnes in 2018.", "The Intergovernmental Panel on Climate Change (IPCC) agreed."]
    assert perturb.is_stated("3.5 million", evidence) and perturb.is_stated("2018", evidence)
    assert not perturb.is_stated("2019", evidence)
    assert perturb.is_stated("IPCC", evidence) and perturb.is_stated("Intergovernmental Panel on Climate Change", evidence)
    assert not perturb.is_stated("World Bank", evidence)


def _pair(claim, label, original="", evidence=("In 2018 the IPCC reported a 20% rise.",), kind="none", id=""):
    return datasets.Pair(claim, evidence, label, id=id or claim, perturbation=kind, original_claim=original or claim)


def test_checkable_and_kept_bound_known_values():
    a = "The IPCC reported a 20% rise in 2018."  # its change replaces a stated year: checkable
    b = "Sales rose 20% in 2001."                # its change replaces 2001, which the evidence never states
    c = "Prices fell 5% in 1999."                # two changes of unstated numbers
    pairs = [
        _pair(a, "supported"), _pair("The IPCC reported a 20% rise in 2019.", "refuted", a, kind="number"),
        _pair(b, "supported"), _pair("Sales rose 20% in 2003.", "refuted", b, kind="number"),
        _pair(c, "supported"), _pair("Prices fell 5% in 1997.", "refuted", c, kind="number", id="c1"),
        _pair("Prices fell 7% in 1999.", "refuted", c, kind="number", id="c2"),
    ]
    decidable = perturb.checkable(pairs)
    assert decidable[a] and decidable["The IPCC reported a 20% rise in 2019."]
    assert not decidable[b] and not decidable[c] and not decidable["c1"]
    # 3 blind changes of 4; passing 5% of 4 allows none through, so b and c must both go: 1/3 kept at most
    bound = perturb.kept_bound(pairs)
    assert bound == {"passed": 0.05, "unstated_number_changes": 3, "changes": 4, "best_kept": round(1 / 3, 4)}
    # allowing 25% (one change) through, rejecting c (two blind changes) is enough
    assert perturb.kept_bound(pairs, passed=0.25)["best_kept"] == round(2 / 3, 4)
    assert perturb.kept_bound(pairs[:1]) is None


# ------------------------------------------------------------------------------------- runners


@pytest.fixture(scope="module")
def tiny_scifact(tmp_path_factory, shared_data):
    """A 20-abstract SciFact corpus holding the cited abstracts of 8 train claims, plus distractors."""
    d = shared_data / "scifact"
    qrels = datasets.load_qrels(d / "qrels_train.tsv")
    queries = datasets.load_queries(d / "claims_train.jsonl")
    chosen = [q for q in queries if q in qrels][:8]
    wanted = {doc for q in chosen for doc in qrels[q]}
    rows = [json.loads(line) for line in (d / "corpus.jsonl").open()]
    keep = [r for r in rows if str(r["doc_id"]) in wanted]
    keep += [r for r in rows if str(r["doc_id"]) not in wanted][: 20 - len(keep)]
    root = tmp_path_factory.mktemp("tiny")
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": queries[q]}) + "\n" for q in chosen))
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{doc}\t1\n" for q in chosen for doc in qrels[q]))
    return root


def test_run_retrieval_and_cached_corpus_index(tiny_scifact, embedder, settings):
    store, source, doc_of = runners.corpus_store(tiny_scifact / "corpus.jsonl", embedder, settings)
    try:
        queries = datasets.load_queries(tiny_scifact / "queries.jsonl")
        qrels = datasets.load_qrels(tiny_scifact / "qrels.tsv")
        summary, rows = runners.run_retrieval(store, embedder, settings, queries, qrels,
                                         doc_of=lambda d: doc_of[d], depth=20)
    finally:
        store.close()
    assert summary["queries"] == 8 and list(summary["variants"]) == list(runners.VARIANTS)
    for figures in summary["variants"].values():
        assert set(figures) == {"ndcg@10", "recall@5", "recall@20", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
        assert all(0 <= figures[m] <= 1 for m in ("ndcg@10", "recall@5", "recall@20", "mrr@10"))
        assert figures["recall@20"] >= figures["recall@5"]
    # 20 abstracts: the cited one is nearly always found
    assert summary["variants"]["rrf+rerank"]["recall@20"] >= 0.9
    assert summary["variants"]["bm25"]["ndcg@10"] >= 0.5
    assert len(rows) == 4 * 8
    # a second run reuses the cached index: nothing is embedded again
    before = embedder.texts_encoded
    store, _, _ = runners.corpus_store(tiny_scifact / "corpus.jsonl", embedder, settings)
    assert store.counts()["documents"] == 20 and embedder.texts_encoded == before
    store.close()


def test_the_cached_corpus_index_is_kept_per_vector_space(tiny_scifact, settings):
    """An int8 embedder's index is not torch's; bfloat16 gives torch's vectors (to rounding) and shares it."""
    from types import SimpleNamespace

    def files(backend):
        fake = SimpleNamespace(name="m", backend=backend, texts_encoded=0, encode=lambda texts, **_: np.ones((len(texts), 4), np.float32))
        store, _, _ = runners.corpus_store(tiny_scifact / "corpus.jsonl", fake, settings)
        store.close()
        return {p.name for p in (settings.data_path / "eval").glob("*.db")}

    torch_files = files("torch")
    assert files("torch-bf16") == files("auto") == torch_files
    assert len(files("torch-int8") - torch_files) == 1


def test_run_verify_with_real_verifiers(shared_data, embedder, settings):
    pairs = datasets.load_pairs("covidfact", shared_data / "covidfact" / "COVIDFACT_dataset.jsonl")[:8]
    verifiers = {m: runners.make_verifier(m, embedder, settings) for m in runners.METHODS}
    summary, records = runners.run_verify(pairs, verifiers)
    assert summary["pairs"] == 8 and set(summary["methods"]) == set(runners.METHODS)
    for m, figures in summary["methods"].items():
        assert sum(sum(row.values()) for row in figures["confusion"].values()) == 8
        mine = [r for r in records if r["method"] == m]
        expected = metrics.binary_metrics([r["gold"] == "supported" for r in mine],
                                          [r["label"] == Label.SUPPORTED for r in mine])
        assert figures["balanced_accuracy"] == round(expected["balanced_accuracy"], 4) and figures["p50_ms"] > 0
        gold_refuted = sum(p.label == "refuted" for p in pairs)
        flagged = sum(r["label"] != Label.SUPPORTED for r in records if r["method"] == m and r["gold"] == "refuted")
        assert figures["flag_recall"] == pytest.approx(round(flagged / gold_refuted, 4))
    nei = [datasets.Pair("c", ("e",), "nei")]
    with pytest.raises(ValueError, match="no claim"):
        runners.run_verify(nei, verifiers)


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


def test_run_perturb_figures(shared_data, embedder, settings):
    pairs = datasets.load_perturbed(shared_data / "perturbed" / "open.jsonl")
    pairs = [p for p in pairs if p.source == "climate-fever"][:3] + [p for p in pairs if p.label == "refuted"][:3]
    originals = {p.claim for p in pairs if p.label == "supported"}
    assert originals and len(originals) < len(pairs)

    def keeps_originals(claim: str, evidence) -> Verdict:  # what a perfect verifier does with these pairs
        label = Label.SUPPORTED if claim in originals else Label.CONTRADICTED
        return Verdict(runners.make_claim(claim), label, 1.0 if label is Label.SUPPORTED else 0.0, "perfect")

    verifiers = {"perfect": keeps_originals, "default": runners.make_verifier("default", embedder, settings)}
    summary, records = runners.run_perturb(pairs, verifiers)
    assert summary["pairs"] == 6 and len(records) == 12
    perfect = summary["methods"]["perfect"]
    assert perfect["perturbed_supported"] == 0.0 and perfect["original_supported"] == 1.0
    kinds = {p.perturbation for p in pairs if p.label == "refuted"}
    assert perfect["perturbed_supported_by_kind"] == dict.fromkeys(sorted(kinds), 0.0)
    # the real verifier's figures are the shares of its own verdicts, per kind of change too
    default = summary["methods"]["default"]
    mine = [r for r in records if r["method"] == "default"]
    passed = {r["id"]: r["label"] == Label.SUPPORTED for r in mine}
    assert default["perturbed_supported"] == _share([passed[p.id] for p in pairs if p.label == "refuted"])
    assert default["original_supported"] == _share([passed[p.id] for p in pairs if p.label == "supported"])
    for kind in kinds:
        assert default["perturbed_supported_by_kind"][kind] == _share(
            [passed[p.id] for p in pairs if p.label == "refuted" and p.perturbation == kind])
    decidable = perturb.checkable(pairs)
    assert default["checkable_perturbed_supported"] == _share(
        [passed[p.id] for p in pairs if p.label == "refuted" and decidable.get(p.id)])
    assert summary["checkable"]["perturbed"] == sum(p.label == "refuted" and decidable.get(p.id, False) for p in pairs)


def test_answers_helpers_and_run(shared_data, embedder, settings, tmp_path):
    assert runners.as_sentence("Which city is the capital of France?", "Paris.") == \
        'The answer to the question "Which city is the capital of France" is Paris.'
    assert runners.length_matched("Delhi", "Mumbai")
    assert not runners.length_matched("Delhi", "The Oberoi family's hotel company is based in Mumbai.")
    rows = datasets.load_halueval(shared_data / "halueval" / "qa_2000.jsonl")[:2]
    summary, records = runners.run_answers(rows, runners.make_verifier("default", embedder, settings), embedder, settings,
                                      workdir=tmp_path)
    assert summary["pairs"] == 2 and len(records) == 4
    for form in ("written", "sentence"):
        assert summary["forms"][form]["all"]["pairs"] == 2
        told = [r["hallucinated_flagged"] and not r["right_flagged"] for r in records if r["form"] == form]
        assert summary["forms"][form]["all"]["told_apart"] == round(sum(told) / len(told), 4)
    assert not list(tmp_path.glob("*.db"))  # the per-row stores are removed


def test_plots_are_written(tmp_path):
    records = [{"method": "default", "gold": g, "confidence": c, "ms": 3.0}
               for g, c in [("supported", 0.9), ("refuted", 0.2), ("supported", 0.7)]]
    scores = plots.plot_scores(records, tmp_path / "s.png")
    latency = plots.plot_latency({"bm25": [1, 2, 3], "dense": [2, 3, 4]}, tmp_path / "l.png")
    assert scores.read_bytes()[:4] == b"\x89PNG" and latency.stat().st_size > 1000
