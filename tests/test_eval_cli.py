"""`ravbot eval …` through click: each subcommand prints one JSON object of the documented shape
with --json, a table without it, PNGs with --plot, and one clear error for bad input."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.app import build_embedder
from lab import datasets
from lab.cli import eval_group
from pipeline.types import Document


def invoke(settings, *args: str):
    result = CliRunner().invoke(eval_group, list(args), obj={"settings": settings}, catch_exceptions=False)
    return result


@pytest.fixture(scope="module")
def mini_beir(tmp_path_factory, shared_data):
    """15 SciFact abstracts in BEIR format with 5 queries that cite them."""
    d = shared_data / "scifact"
    qrels = datasets.load_qrels(d / "qrels_train.tsv")
    queries = datasets.load_queries(d / "claims_train.jsonl")
    chosen = [q for q in queries if q in qrels][20:25]
    wanted = {doc for q in chosen for doc in qrels[q]}
    corpus = datasets.load_corpus(d / "corpus.jsonl")
    keep = [c for c in corpus if c in wanted] + [c for c in list(corpus)[:30] if c not in wanted]
    root = tmp_path_factory.mktemp("beir")
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": c, "title": corpus[c][0], "text": corpus[c][1]}) + "\n" for c in keep[:15]))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": queries[q]}) + "\n" for q in chosen))
    (root / "qrels.tsv").write_text("".join(f"{q}\t{doc}\t1\n" for q in chosen for doc in qrels[q]))
    return root


def test_retrieval_json_table_and_plot(mini_beir, settings, tmp_path, embedder):
    args = ["retrieval", "--corpus", str(mini_beir / "corpus.jsonl"), "--queries", str(mini_beir / "queries.jsonl"),
            "--qrels", str(mini_beir / "qrels.tsv"), "--variants", "bm25,rrf+rerank", "--depth", "20"]
    result = invoke(settings, *args, "--json", "--plot", str(tmp_path / "plots"))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"variants", "queries"} and out["queries"] == 5
    assert set(out["variants"]) == {"bm25", "rrf+rerank"}
    assert set(out["variants"]["bm25"]) == {"ndcg@10", "recall@5", "recall@20", "recall@100", "mrr@10", "p50_ms", "p95_ms"}
    assert out["variants"]["rrf+rerank"]["recall@20"] == 1.0  # 15 documents, depth 20
    assert (tmp_path / "plots" / "retrieval_latency.png").stat().st_size > 1000
    used = build_embedder(settings)  # the eval commands' embedder: the one `bot.app.build` makes (model, backend, cache)
    before = used.texts_encoded
    table = invoke(settings, *args)
    assert "ndcg@10" in table.stdout and "rrf+rerank" in table.stdout and "5 queries" in table.stdout
    # only the 5 queries (once in a batch, then once for the one variant that embeds: bm25 does not,
    # plus a warm-up): the corpus index was cached
    assert used.texts_encoded - before == 5 + 5 + 1


def test_retrieval_bad_variant(mini_beir, settings):
    result = CliRunner().invoke(eval_group, ["retrieval", "--corpus", str(mini_beir / "corpus.jsonl"),
                                             "--queries", str(mini_beir / "queries.jsonl"),
                                             "--qrels", str(mini_beir / "qrels.tsv"), "--variants", "bm25,splade"],
                                obj={"settings": settings})
    assert result.exit_code == 2 and "unknown variant splade" in result.output


def test_verify_json_and_plots(shared_data, settings, tmp_path):
    result = invoke(settings, "verify", "--dataset", "healthver", "--path", str(shared_data / "healthver" / "healthver_dev.csv"),
                    "--limit", "6", "--json", "--plot", str(tmp_path))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) == {"methods", "pairs"} and out["pairs"] == 6
    for figures in out["methods"].values():
        assert {"balanced_accuracy", "supported_precision", "supported_recall", "flag_recall", "confusion", "p50_ms"} <= set(figures)
        assert sum(sum(r.values()) for r in figures["confusion"].values()) == 6
    assert (tmp_path / "verify_healthver_scores.png").exists() and (tmp_path / "verify_healthver_latency.png").exists()


def test_verify_errors(shared_data, settings):
    path = str(shared_data / "covidfact" / "COVIDFACT_dataset.jsonl")
    bad = CliRunner().invoke(eval_group, ["verify", "--dataset", "covidfact", "--path", path, "--methods", "nli2"],
                             obj={"settings": settings})
    assert bad.exit_code == 2 and "unknown method nli2" in bad.output
    no_corpus = CliRunner().invoke(eval_group, ["verify", "--dataset", "covidfact", "--path", path, "--evidence", "retrieved"],
                                   obj={"settings": settings})
    assert no_corpus.exit_code == 2 and "needs --corpus" in no_corpus.output


def test_perturb_write_then_from(shared_data, settings, tmp_path):
    saved = tmp_path / "set.jsonl"
    wrote = invoke(settings, "perturb", "--dataset", "covidfact", "--path", str(shared_data / "covidfact" / "COVIDFACT_dataset.jsonl"),
                   "--limit", "5", "--write", str(saved), "--write-only")
    assert wrote.exit_code == 0 and wrote.stdout == ""
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert lines and {line["label"] for line in lines} == {"supported", "refuted"}
    assert all(set(line) >= {"claim", "evidence", "label", "perturbation"} for line in lines)
    result = invoke(settings, "perturb", "--from", str(saved), "--methods", "cosine", "--json")
    out = json.loads(result.stdout)
    assert out["pairs"] == len(lines) and set(out["methods"]) == {"cosine"}
    assert {"perturbed_supported", "original_supported", "checkable_perturbed_supported",
            "checkable_original_supported"} <= set(out["methods"]["cosine"])
    assert 0 <= out["checkable"]["perturbed"] <= out["pairs"] and 0 < out["kept_bound"]["best_kept"] <= 1
    neither = CliRunner().invoke(eval_group, ["perturb"], obj={"settings": settings})
    assert neither.exit_code == 2 and "--from FILE" in neither.output


def test_answers_json(shared_data, settings):
    result = invoke(settings, "answers", "--path", str(shared_data / "halueval" / "qa_2000.jsonl"), "--limit", "2", "--json")
    out = json.loads(result.stdout)
    assert out["pairs"] == 2 and set(out["forms"]) == {"written", "sentence"}
    assert set(out["forms"]["written"]) == {"all", "length_matched"}


def test_golden_against_the_served_index(settings, embedder, tmp_path):
    from bot.app import build_store
    from pipeline.index import index_documents

    docs = [Document(id="docs:deploy.md", source="docs", title="Deploying", path="/team/docs/deploy.md",
                     text="To deploy the service run make release. Releases go out every Tuesday at 10:00."),
            Document(id="docs:oncall.md", source="docs", title="On-call", path="/team/docs/oncall.md",
                     text="The on-call engineer answers pages within 15 minutes and keeps the incident log.")]
    store = build_store(settings)
    index_documents(store, embedder, "docs", docs)
    store.close()
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps({"question": "How fast must the on-call engineer answer pages?", "relevant": ["docs/oncall.md"]}) + "\n"
        + json.dumps({"question": "When do releases go out?", "relevant": ["deploy.md"],
                      "expected_answer": "Every Tuesday at 10:00."}) + "\n")
    result = invoke(settings, "golden", "--file", str(golden), "--k", "1", "--no-answers", "--json")
    out = json.loads(result.stdout)
    assert out["recall@1"] == 1.0 and out["questions"] == 2 and out["idk_rate"] is None


def test_verify_scifact_with_retrieved_evidence(shared_data, settings, tmp_path):
    """Evidence retrieved by ravbot from the corpus; pairs whose abstract is not in the corpus are skipped."""
    d = shared_data / "scifact"
    pairs = datasets.load_pairs("scifact", d / "claims_train.jsonl")[:4]
    cited = {doc for p in pairs for doc in p.doc_ids}
    rows = [json.loads(line) for line in (d / "corpus.jsonl").open()]
    keep = [r for r in rows if str(r["doc_id"]) in cited] + rows[:6]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in keep))
    base = ["verify", "--dataset", "scifact", "--path", str(d / "claims_train.jsonl"), "--corpus", str(corpus),
            "--methods", "default", "--json"]
    oracle = json.loads(invoke(settings, *base).stdout)
    retrieved = json.loads(invoke(settings, *base, "--evidence", "retrieved").stdout)
    assert oracle["pairs"] == retrieved["pairs"] >= 4
    assert set(retrieved["methods"]["default"]["confusion"]) <= {"supported", "refuted"}
    beir = tmp_path / "beir.jsonl"
    beir.write_text(json.dumps({"_id": "1", "title": "t", "text": "x"}) + "\n")
    bad = CliRunner().invoke(eval_group, base[:5] + ["--corpus", str(beir)], obj={"settings": settings})
    assert bad.exit_code == 1 and "SciFact corpus schema" in bad.output


def test_golden_asks_through_the_app(settings, embedder, tmp_path):
    """With answers: the question that has an expected answer is asked through bot.app; it is answered."""
    from bot.app import build_store
    from pipeline.index import index_documents

    settings = settings.replace(wikipedia="off")
    store = build_store(settings)
    index_documents(store, embedder, "docs", [Document(
        id="docs:deploy.md", source="docs", title="Deploying", path="/team/docs/deploy.md",
        text="To deploy the service run make release. Releases go out every Tuesday at 10:00 in Berlin.")])
    store.close()
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"question": "When do releases of the service go out?", "relevant": ["deploy.md"],
                                  "expected_answer": "Every Tuesday at 10:00."}) + "\n")
    out = json.loads(invoke(settings, "golden", "--file", str(golden), "--json").stdout)
    assert out["with_expected_answer"] == 1 and out["idk_rate"] == 0.0 and out["recall@5"] == 1.0
