"""The whole flow through `bot.app.build`: real model, real SQLite, the real openai client against a
local OpenAI-compatible server, the real wikipedia client against a local MediaWiki."""

from __future__ import annotations

import pytest

from bot.app import build
from config.settings import load_settings
from pipeline.types import IDK, KB_UNAVAILABLE, Label, Question
from tests.fakes.openai_server import FakeOpenAI

RELEASES = """# Releases

ravbot 1.0 was released in 2018 by the Tools team in Berlin.
The 2.0 release added Discord support in 2021.

# Backups

Backups of the index are kept for 30 days on the storage server.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("kb")
    (d / "releases.md").write_text(RELEASES)
    (d / "oncall.md").write_text("# On-call\n\nAlice Smith leads the on-call rota for the platform team.\n")
    return d


def make_app(tmp_path, corpus, **overrides):
    settings = load_settings(env={}, **{"data_dir": str(tmp_path / "data"), "sources": f"kb={corpus}",
                                        "wikipedia": "off", "rate_limit_per_minute": 0, **overrides})
    app = build(settings, run_scheduler=False)
    app.index_one("kb")
    return app


@pytest.fixture
def app(tmp_path, corpus, embedder):
    a = make_app(tmp_path, corpus)
    yield a
    a.close()


def test_extractive_answer_is_cited_verified_and_timed(app):
    answer = app.ask(Question("How long are backups kept?"))
    assert "30 days" in answer.text and "[" in answer.text
    assert answer.sources and answer.sources[0].title == "Releases"
    assert answer.verdicts and all(v.label is Label.SUPPORTED for v in answer.verdicts)
    assert {"retrieve", "generate", "claims", "evidence", "verify"} <= set(answer.timings)
    assert not answer.error and not answer.idk


def test_a_sentence_its_cited_chunk_states_word_for_word_needs_no_search(app, monkeypatch):
    import pipeline.answer as flow

    searched: list[str] = []
    real = flow.kb_evidence_batch

    def recording(claims, **kwargs):
        searched.extend(claims)
        return real(claims, **kwargs)

    monkeypatch.setattr(flow, "kb_evidence_batch", recording)
    answer = app.ask(Question("How long are backups kept?"))  # extractive: the chunk's own sentences
    assert answer.verdicts and all(v.label is Label.SUPPORTED for v in answer.verdicts)
    assert searched == []
    assert all(v.evidence is not None and v.evidence.title == "Releases" for v in answer.verdicts)


def test_quoted_in_is_word_for_word_case_and_punctuation_aside():
    from pipeline.answer import quoted_in
    from pipeline.types import Evidence

    chunk = [Evidence(text="Backups of the **index** are kept for 30 days on the storage server.", title="t", url="")]
    assert quoted_in("backups of the index are kept for 30 days.", chunk)
    assert not quoted_in("Backups of the index are kept for 31 days.", chunk)  # one word differs
    assert not quoted_in("ups of the index are kept", chunk)  # words are whole
    assert not quoted_in("", chunk) and not quoted_in("Backups are kept.", [])


def test_off_topic_question_gets_the_fixed_sentence(app):
    answer = app.ask(Question("What is the boiling point of liquid nitrogen in Kelvin?"))
    assert answer.text == IDK and answer.idk and not answer.verdicts


@pytest.mark.parametrize("text, expected", [
    ("", "Please ask"),
    ("   \n\t ", "Please ask"),
    ("\x00\x01\x02", "Please ask"),
    ("why? " * 4000, "characters long"),
    ("???", "doesn't look like a question"),
])
def test_bad_questions_get_a_clear_message(app, text, expected):
    assert expected in app.check_question(Question(text))
    answer = app.ask(Question(text))
    assert expected in answer.text and answer.error == "bad question"


def test_control_characters_are_stripped_not_fatal(app):
    answer = app.ask(Question("How long are\x00 backups\u200b kept?\x07"))
    assert "30 days" in answer.text


def test_rate_limit_says_please_wait(tmp_path, corpus, embedder):
    a = make_app(tmp_path, corpus)
    a.settings = a.settings.replace(rate_limit_per_minute=2)
    try:
        q = Question("How long are backups kept?", asker="U1", platform="slack")
        assert a.check_question(q) is None and a.check_question(q) is None
        assert "please wait" in a.check_question(q)
        assert a.check_question(Question(q.text, asker="U2", platform="slack")) is None
    finally:
        a.close()


def test_invented_citation_is_removed_and_counted(tmp_path, corpus, embedder):
    with FakeOpenAI() as llm:
        llm.reply("Backups are kept for 30 days [1][7].")
        a = make_app(tmp_path, corpus, llm_base_url=llm.url, llm_retries=0, correction_rounds=0)
        try:
            answer = a.ask(Question("How long are backups kept?"))
        finally:
            a.close()
        system, user = llm.prompts()[0]
    assert answer.text == "Backups are kept for 30 days [1]."
    assert answer.invented_citations == 1
    assert "ONLY the documents" in system and "<documents>" in user and "30 days" in user


def test_correction_loop_fixes_a_wrong_year(tmp_path, corpus, embedder):
    with FakeOpenAI() as llm:
        llm.reply("ravbot 1.0 was released in 2020 by the Tools team [1].")
        llm.reply("ravbot 1.0 was released in 2018 by the Tools team [1].")
        a = make_app(tmp_path, corpus, llm_base_url=llm.url, llm_retries=0)
        try:
            answer = a.ask(Question("When was ravbot 1.0 released?"))
        finally:
            a.close()
        prompts = llm.prompts()
    assert len(prompts) == 2
    assert "could not be confirmed by our documents" in prompts[1][1] and "2020" in prompts[1][1]
    assert "2018" in answer.text and "2020" not in answer.text
    assert "2020" in answer.draft
    assert all(v.label is Label.SUPPORTED for v in answer.verdicts)


def test_without_llm_contradicted_sentences_are_dropped(app):
    from pipeline.answer import ClaimChecker, Timer, correct

    text = "ravbot 1.0 was released in 2018 [1]. Backups are kept for 90 days [1]."
    checker = ClaimChecker(app.parts, Timer(), {})
    verdicts = checker.check(text)
    assert [v.label for v in verdicts][0] is Label.SUPPORTED
    assert verdicts[1].label in (Label.CONTRADICTED, Label.UNSUPPORTED)
    fixed, after = correct(text, verdicts, "q", [], {}, app.parts, checker)
    assert fixed == "ravbot 1.0 was released in 2018 [1]."
    assert len(after) == 1 and after[0].label is Label.SUPPORTED


def test_llm_down_falls_back_to_extractive_with_a_note(tmp_path, corpus, embedder):
    llm = FakeOpenAI().start()
    url = llm.url
    llm.stop()
    a = make_app(tmp_path, corpus, llm_base_url=url, llm_retries=0, llm_timeout=2.0)
    try:
        answer = a.ask(Question("How long are backups kept?"))
    finally:
        a.close()
    assert "30 days" in answer.text
    assert any("language model was unavailable" in n for n in answer.notes)


def test_store_unavailable_gets_a_clear_message(tmp_path, corpus, embedder):
    a = make_app(tmp_path, corpus)
    a.parts.store.close()
    answer = a.ask(Question("How long are backups kept?"))
    a.feedback.close()
    assert answer.text == KB_UNAVAILABLE and answer.error.startswith("store unavailable")


def test_wikipedia_down_verifies_on_the_knowledge_base_and_says_so(tmp_path, corpus, embedder):
    from tests.fakes.mediawiki import FakeMediaWiki

    wiki = FakeMediaWiki().start()
    url = wiki.url
    wiki.stop()
    a = make_app(tmp_path, corpus, wikipedia="always", wikipedia_api_url=url, wikipedia_timeout=2.0)
    try:
        answer = a.ask(Question("Who leads the on-call rota?"))
    finally:
        a.close()
    assert "Alice Smith" in answer.text
    assert any("Wikipedia was unreachable" in n for n in answer.notes)
    assert all(v.checked_against == ("kb",) for v in answer.verdicts)


def test_wikipedia_never_vouches_for_a_code_name_the_documents_lack(tmp_path, corpus, embedder):
    """A code identifier no document mentions stays invented even where Wikipedia mentions it: it
    would be the team's own name. Wikipedia counts for public names only."""
    from tests.fakes.mediawiki import FakeMediaWiki

    article = {"title": "Storage server", "sentences": [
        "A storage server keeps backups, for example in the backup_bucket_name store, for 30 days."]}
    with FakeOpenAI() as llm, FakeMediaWiki([article]) as wiki:
        llm.reply("Backups of the index are kept in the backup_bucket_name store for 30 days [1].")
        a = make_app(tmp_path, corpus, llm_base_url=llm.url, llm_retries=0, correction_rounds=0,
                     wikipedia="always", wikipedia_api_url=wiki.url)
        try:
            answer = a.ask(Question("How long are backups kept?"))
        finally:
            a.close()
    (verdict,) = answer.verdicts
    assert verdict.checked_against == ("kb", "wikipedia")
    assert verdict.label is Label.UNSUPPORTED and verdict.reason == "no document mentions backup_bucket_name"


def test_a_name_the_question_gives_is_not_invented(tmp_path, corpus, embedder):
    """The asker's own name ("backup_bucket_name" in their question) is given, not invented by the
    answer: no "no document mentions" for it; a name neither the documents nor the question have is."""
    with FakeOpenAI() as llm:
        llm.reply("Backups of the index are kept for 30 days, also those in backup_bucket_name [1]. "
                  "They are copied to the archive_bucket_name store [1].")
        a = make_app(tmp_path, corpus, llm_base_url=llm.url, llm_retries=0, correction_rounds=0)
        try:
            answer = a.ask(Question("How long are backups kept in our backup_bucket_name store?"))
        finally:
            a.close()
    given, invented = answer.verdicts
    assert "backup_bucket_name" not in given.reason
    assert invented.reason == "no document mentions archive_bucket_name"
