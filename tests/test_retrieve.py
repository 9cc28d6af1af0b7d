"""Retrieval: RRF known values, and real SciFact abstracts through the real index and model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bot.app import stage_options
from pipeline.index import index_documents
from pipeline.retrieve import (
    asked,
    documented,
    in_scope,
    looked_up_as,
    minmax,
    question_nouns,
    retrieve,
    rrf,
    unseen,
)
from pipeline.store import EmbeddedStore
from pipeline.types import Chunk, Document, Hit


@pytest.fixture
def options(settings):
    """The retrieval options `bot.app` builds from the default settings."""
    return stage_options(settings).retrieval


def test_rrf_known_values():
    scores = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63)
    assert scores["d"] == pytest.approx(1 / 62)
    assert sorted(scores, key=lambda x: -scores[x]) == ["b", "a", "d", "c"]


def test_minmax_known_values():
    assert minmax(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([5.0, 5.0])).tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def scifact(shared_data, embedder, tmp_path_factory):
    """~300 real SciFact abstracts: every cited abstract of the first train claims plus distractors."""
    claims = [json.loads(line) for line in (shared_data / "scifact/claims_train.jsonl").open()]
    claims = [c for c in claims if c["evidence"]][:60]
    wanted = {int(d) for c in claims for d in c["evidence"]}
    docs = []
    with (shared_data / "scifact/corpus.jsonl").open() as f:
        for line in f:
            row = json.loads(line)
            if row["doc_id"] in wanted or len(docs) < 300 - len(wanted):
                docs.append(Document(id=f"scifact:{row['doc_id']}", source="scifact", title=row["title"],
                                     text=" ".join(row["abstract"]), path=str(row["doc_id"])))
    store = EmbeddedStore(tmp_path_factory.mktemp("scifact") / "index.db")
    index_documents(store, embedder, "scifact", docs)
    yield store, claims
    store.close()


@pytest.mark.parametrize("variant", ["bm25", "dense", "rrf", "rrf+rerank"])
def test_scifact_claims_find_their_abstract_in_top5(scifact, embedder, options, variant):
    store, claims = scifact
    found = 0
    for claim in claims:
        hits = retrieve(claim["claim"], store=store, embedder=embedder, options=options, variant=variant, k=20)
        docs = list(dict.fromkeys(h.chunk.doc_id for h in hits))[:5]
        found += any(f"scifact:{d}" in docs for d in claim["evidence"])
    assert found / len(claims) >= 0.7, f"{variant}: only {found}/{len(claims)} claims found their abstract"


def test_off_topic_question_is_below_the_floor(scifact, embedder, settings, options):
    store, _ = scifact
    hits = retrieve("How do I configure the Slack bot token for ravbot?", store=store, embedder=embedder, options=options)
    assert hits, "retrieval always returns candidates; the floor decides"
    limits = {"floor": settings.relevance_floor, "confident": settings.relevance_confident,
              "topical": settings.relevance_topical}
    assert not in_scope(hits, [], [], **limits)
    on_topic = retrieve("Microstructural development of newborn cerebral white matter", store=store,
                        embedder=embedder, options=options)
    assert in_scope(on_topic, [], [], **limits)


def _hit(text: str, dense: float) -> Hit:
    return Hit(chunk=Chunk(id=text[:8], doc_id="d", text=text, context_text=text, title="t"), score=dense, dense=dense)


LIMITS = {"floor": 0.4, "confident": 0.65, "topical": 0.45}


@pytest.mark.parametrize(("best", "unknown", "unseen_", "answer"), [
    (0.39, [], [], False),            # below the floor
    (0.40, [], [], True),
    (0.60, ["mongodb"], [], False),   # a noun no document has, not similar enough to overrule it
    (0.65, ["mongodb"], [], True),    # confident: the noun is a synonym or a typo
    (0.44, [], ["chicago"], False),   # a noun the best chunks lack, weakly similar
    (0.45, [], ["chicago"], True),
])
def test_in_scope_known_values(best, unknown, unseen_, answer):
    assert in_scope([_hit("x", best - 0.1), _hit("y", best)], unknown, unseen_, **LIMITS) is answer


@pytest.mark.parametrize(("best", "unseen_", "topics", "answer"), [
    (0.49, ["encrypt", "default"], None, False),        # two nouns the best chunks lack, below `broad`
    (0.50, ["encrypt", "default"], None, True),
    (0.49, ["encrypt"], None, True),                    # one is the topical rule's (0.45)
    (0.49, ["health", "check", "servers"], ["servers"], True),  # "our health check": the asker's own
])
def test_in_scope_broad_known_values(best, unseen_, topics, answer):
    hits = [_hit("x", best - 0.1), _hit("y", best)]
    assert in_scope(hits, [], unseen_, **LIMITS, broad=0.5, unseen_topics=topics) is answer


def test_unseen_reads_stems_that_differ_until_stemmed_twice():
    hits = [_hit("The create-alias example creates an alias named LIVE.", 0.5)]
    assert unseen(["aliases", "regions"], hits) == ["regions"]  # Porter: aliases → alias, alias → alia
    assert question_nouns("Can I use os.loadavg() in our health check on Windows servers?", own=False) == [
        "os_loadavg", "windows", "servers"]


def test_asked_leaves_out_the_sentences_that_set_the_scene():
    assert asked("Our scanner says we need at least 2.35.2. What's that release about?") == "What's that release about?"
    assert asked("Did anything change in 2.31 about the index file? Our monorepo's index is huge.") == \
        "Did anything change in 2.31 about the index file?"
    assert asked("How do I add a dependency?") == "How do I add a dependency?"
    assert asked("We use Postgres. We like it.") == "We use Postgres. We like it."  # nothing asked: all of it
    glob = "Is file(GLOB ... CONFIGURE_DEPENDS) reliable?"  # an ellipsis ends no statement
    assert asked(glob) == glob


def test_question_nouns_and_unseen():
    assert question_nouns("How do I connect a Starlette app to a MongoDB database?") == ["starlette", "app", "mongodb", "database"]
    assert question_nouns("Hi team, where are backups kept? (human)") == ["backups"]  # a greeting or a tag is no topic
    # only a noun written as a name may refuse a question for being in no document: "health" in "our health
    # check" is a word of the language, "AWS", "keepAlive", "http.Agent" and mid-sentence "Jest" are names
    assert question_nouns("Can I use os.loadavg() in our health check on Windows servers?", names_only=True) == ["os_loadavg", "windows"]
    assert question_nouns("Does Jest set the keepAlive of http.Agent for the AWS keys?", names_only=True) == [
        "jest", "keepalive", "http_agent", "aws"]
    # the asker's own things ("our", "my") are their setting, not what they ask about
    assert question_nouns("Can pip read the password for our Artifactory index from my Mac's keyring?", names_only=True) == []
    assert question_nouns("How do I connect our app to MongoDB?", names_only=True) == ["mongodb"]
    # … and so are an example the asker names, an everyday acronym and a unit after a figure
    assert question_nouns("Can Lackey count how often a function, say parse_record, is called?", names_only=True) == ["lackey"]
    assert question_nouns("Can we set valgrind flags for everyone on the CI runners?", names_only=True) == []
    assert question_nouns("Top shows 300 MB RSS, but Massif says 40 MB. Which is right?", names_only=True) == ["massif"]
    assert question_nouns("How does heaptrack compare with Massif?", names_only=True) == ["massif"]  # "heaptrack" is plain
    hits = [_hit("Per diem rates for lodging depend on the city.", 0.5), _hit("Receipts are required.", 0.4)]
    assert unseen(["lodging", "rate", "chicago", "receipts"], hits) == ["chicago"]
    assert unseen(["receipts"], hits, top=1) == ["receipts"]
    node = [_hit("Node.js releases are cut from package.json versions.", 0.5)]
    assert unseen(["node_js", "package_json", "npm_rc"], node) == ["npm_rc"]  # dotted names, as masked, by their parts


def test_filters_restrict_results(scifact, embedder, options):
    store, claims = scifact
    hits = retrieve(claims[0]["claim"], store=store, embedder=embedder, options=options, filters={"source": ["other"]})
    assert hits == []


def test_unknown_variant_is_named(scifact, embedder, options):
    store, _ = scifact
    with pytest.raises(ValueError, match="'fancy'"):
        retrieve("x", store=store, embedder=embedder, options=options, variant="fancy")


@pytest.mark.parametrize(("name", "key"), [
    ("-dcmake_build_type", "cmake_build_type"),  # a define on the command line: its variable
    ("--verbose", "verbose"), ("--dry-run", "dry-run"),  # an option: its name
    ("foo_dir", ""), ("findfoo_cmake", ""), ("bar_baz", ""),  # the asker's placeholders: never looked up
    ("mongodb", "mongodb"), ("toolbar", "toolbar"),
])
def test_a_questions_name_is_looked_up_as_documents_write_it(name, key):
    assert looked_up_as(name) == key


def test_a_name_joined_from_documented_words_is_documented(scifact):
    store, _ = scifact
    assert documented("cerebral", store)
    assert documented("CEREBRAL_WHITE_MATTER", store)  # "white matter" as written, and "cerebral"
    assert not documented("MONGODB", store) and not documented("MONGO_WHITE_MATTER", store)
    assert not documented("CEREBRAL_MATTER_WHITE", store)  # each word is there, never together
