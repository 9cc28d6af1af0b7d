"""The LLM second opinion on UNCERTAIN claims: the real `openai` client against the local fake server."""

from __future__ import annotations

import json
import logging

import pytest

from pipeline.llm import OpenAIChat
from pipeline.types import Claim, Evidence, Label, Question, Verdict
from pipeline.verify.second_opinion import METHOD, find_quote, parse_reply, second_opinion
from tests.fakes.openai_server import FakeOpenAI

SECRET = "sk-second-opinion-secret"
BACKUPS = "Backups of the index are kept for 30 days on the storage server. Older backups are deleted."
RELEASES = "ravbot 1.0 was released in 2018 by the Tools team in Berlin."


def verdict(text: str, label: Label, passage: str = BACKUPS, sentence: str = "", confidence: float = 0.35,
            reason: str = "the sources only partly back this") -> Verdict:
    sentence = sentence or passage.split(". ")[0] + "."
    return Verdict(Claim(text, 0, len(text)), label, confidence, "default", Evidence(passage, title="Ops"), sentence,
                   reason=reason if label.flagged else "")


TAPE = verdict("Backups are kept for 30 days, then moved to tape.", Label.UNCERTAIN)
WEEKS = verdict("Backups are kept for four weeks.", Label.UNCERTAIN)
MUNICH = verdict("ravbot 1.0 was released in Munich.", Label.CONTRADICTED, RELEASES, confidence=0.15,
                 reason="source says Berlin")
OK = verdict("ravbot 1.0 was released in 2018.", Label.SUPPORTED, RELEASES, confidence=0.9)


def reply(*entries: dict) -> str:
    return json.dumps({"verdicts": list(entries)})


def entry(n: int, label: str, quote: str = "", reason: str = "because") -> dict:
    return {"id": n, "label": label, "quote": quote, "reason": reason}


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


@pytest.fixture
def llm(server):
    return OpenAIChat(server.url, "fake-model", api_key=SECRET, timeout=5.0, max_retries=0)


def test_only_uncertain_claims_are_sent_in_one_json_request(server, llm):
    server.reply(reply(entry(1, "unknown"), entry(2, "unknown")))
    before = [OK, TAPE, MUNICH, WEEKS]
    after = second_opinion(before, llm)
    assert after == before
    assert len(server.requests) == 1
    body = server.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    system, user = server.prompts()[0]
    assert '"verdicts"' in system and '"quote"' in system
    assert "Claim 1: Backups are kept for 30 days, then moved to tape." in user
    assert "Claim 2: Backups are kept for four weeks." in user
    assert "Claim 3" not in user
    assert "Munich" not in user and "released in 2018." not in user  # SUPPORTED / CONTRADICTED claims stay home
    assert BACKUPS in user  # the evidence each claim was judged against


def test_no_request_without_an_uncertain_claim_or_an_llm(server, llm):
    assert second_opinion([OK, MUNICH], llm) == [OK, MUNICH]
    assert second_opinion([TAPE], None) == [TAPE]
    assert server.requests == []


def test_supported_upgrades_and_says_who_decided(server, llm):
    server.reply(reply(entry(1, "supported", "kept for 30 days on the storage server")))
    [after] = second_opinion([WEEKS], llm, supported_confidence=0.6)
    assert after.label is Label.SUPPORTED and after.method == METHOD
    assert after.confidence == pytest.approx(0.6)
    assert after.reason == "" and after.conflict == "" and after.claim == WEEKS.claim


def test_contradicted_quotes_the_source_in_its_own_words(server, llm):
    server.reply(reply(entry(1, "contradicted", "  older BACKUPS are\n deleted. ", "they are deleted")))
    [after] = second_opinion([TAPE], llm)
    assert after.label is Label.CONTRADICTED and after.method == METHOD
    assert after.conflict == "Older backups are deleted"
    assert after.reason.startswith("source says Older backups are deleted")
    assert after.sentence == "Older backups are deleted."  # the footnote quotes the sentence holding it
    assert after.confidence <= 0.15


def test_each_claim_is_decided_by_its_own_entry(server, llm):
    server.reply(reply(entry(2, "supported", "kept for 30 days"), entry(1, "unknown")))
    assert [v.label for v in second_opinion([TAPE, WEEKS], llm)] == [Label.UNCERTAIN, Label.SUPPORTED]


@pytest.mark.parametrize("quote", [
    "backups are kept for 90 days",  # not in the evidence
    "ravbot 1.0 was released in 2018",  # another claim's evidence (never sent with this claim)
    "the",  # too short to decide anything
    "",
])
def test_a_quote_not_in_the_claims_evidence_is_ignored(server, llm, quote):
    server.reply(reply(entry(1, "supported", quote)))
    server.reply(reply(entry(1, "contradicted", quote)))
    assert second_opinion([TAPE], llm) == [TAPE]
    assert second_opinion([TAPE], llm) == [TAPE]


@pytest.mark.parametrize("raw", [
    '{"verdicts": [{"id": 1, "label": "supported", "quote": "kept for 30 days"',  # not JSON
    '["supported"]',
    '{"label": "supported", "quote": "kept for 30 days"}',  # no verdicts list
    '{"verdicts": {"1": "supported"}}',
    reply(entry(7, "supported", "kept for 30 days")),  # unknown id
    reply(entry(0, "supported", "kept for 30 days")),
    reply({"id": True, "label": "supported", "quote": "kept for 30 days", "reason": "x"}),
    reply(entry(1, "maybe", "kept for 30 days")),  # bad label
    reply(entry(1, "uncertain", "kept for 30 days")),
    reply({"id": 1, "label": "supported", "quote": "kept for 30 days"}),  # no reason
    reply({"id": 1, "label": "supported", "reason": "x"}),  # no quote
    reply({"id": 1, "label": ["supported"], "quote": "kept for 30 days", "reason": "x"}),
    reply(entry(1, "supported", "kept for 30 days"), entry(1, "contradicted", "Older backups are deleted")),
    reply("supported"),
    reply(entry(1, "unknown")),
])
def test_malformed_or_invalid_replies_leave_the_verdicts_unchanged(server, llm, raw):
    server.reply(raw)
    before = [TAPE, MUNICH, OK]
    assert second_opinion(before, llm) == before
    assert len(server.requests) == 1


def test_fenced_json_is_read():  # OpenAIChat removes the fence; other LLM seams may pass it on
    raw = "```json\n" + reply(entry(1, "supported", "KEPT for 30 days")) + "\n```"
    assert parse_reply(raw, {1: [BACKUPS]}) == {1: (Label.SUPPORTED, "kept for 30 days", BACKUPS)}


def test_llm_down_leaves_the_verdicts_unchanged_and_warns_without_the_key(server, llm, caplog):
    server.stop()
    with caplog.at_level(logging.WARNING):
        assert second_opinion([TAPE, MUNICH], llm) == [TAPE, MUNICH]
    assert "second opinion skipped" in caplog.text
    assert SECRET not in caplog.text


def test_http_error_leaves_the_verdicts_unchanged(server, llm):
    server.error(400, "bad request")
    assert second_opinion([TAPE], llm) == [TAPE]


def test_a_contradicted_verdict_is_never_changed(server, llm):
    server.reply(reply(entry(1, "supported", "kept for 30 days"), entry(2, "supported", "released in 2018 by")))
    after = second_opinion([MUNICH, TAPE], llm)
    assert after[0] == MUNICH
    assert after[1].label is Label.SUPPORTED
    assert "Claim 2" not in server.prompts()[0][1]


def test_max_claims_bounds_what_is_sent(server, llm):
    server.reply(reply(entry(1, "supported", "kept for 30 days"), entry(2, "supported", "kept for 30 days")))
    after = second_opinion([TAPE, WEEKS], llm, max_claims=1)
    assert [v.label for v in after] == [Label.SUPPORTED, Label.UNCERTAIN]
    with pytest.raises(ValueError, match="max_claims must be at least 1, got 0"):
        second_opinion([TAPE], llm, max_claims=0)


def test_long_evidence_is_trimmed_around_the_aligned_sentence(server, llm):
    filler = "Unrelated words fill this part of the page. " * 60
    long = verdict("Backups are kept for 30 days, then moved to tape.", Label.UNCERTAIN,
                   filler + BACKUPS + " " + filler, sentence=BACKUPS.split(". ")[0] + ".")
    server.reply(reply(entry(1, "unknown")))
    second_opinion([long], llm)
    user = server.prompts()[0][1]
    assert len(user) < 1500 and user.count("kept for 30 days on the storage server") == 2


def test_find_quote_is_case_and_whitespace_insensitive():
    assert find_quote("KEPT for\n30   days", [BACKUPS]) == ("kept for 30 days", BACKUPS)
    assert find_quote('"2018"', ["x", RELEASES]) == ("2018", RELEASES)
    assert find_quote("kept", [BACKUPS]) is None
    assert find_quote("kept for 31 days", [BACKUPS]) is None


def test_setting_is_off_by_default(settings):
    assert settings.verify_llm_second_opinion is False


# --------------------------------------------------------------------------- end to end through bot.app.build

KB = """# Releases

ravbot 1.0 was released in 2018 by the Tools team in Berlin.

# Backups

Backups of the index are kept for 30 days on the storage server.
"""
DRAFT = ("ravbot 1.0 was released in 2018 by the Tools team in Munich [1]. "
         "Backups of the index are kept for 30 days, then moved to tape [1].")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("kb")
    (d / "ops.md").write_text(KB)
    return d


@pytest.mark.parametrize("enabled", [True, False])
def test_end_to_end_only_the_uncertain_claim_gets_a_second_opinion(tmp_path, corpus, embedder, enabled):
    from bot.app import build
    from config.settings import load_settings

    with FakeOpenAI() as server:
        server.reply(DRAFT)
        server.reply(reply(entry(1, "contradicted", "kept for 30 days on the storage server", "stays on the server")))
        settings = load_settings(env={}, data_dir=str(tmp_path / "data"), sources=f"kb={corpus}", wikipedia="off",
                                 rate_limit_per_minute=0, llm_base_url=server.url, llm_retries=0,
                                 correction_rounds=0, verify_llm_second_opinion=enabled)
        app = build(settings, run_scheduler=False)
        try:
            app.index_one("kb")
            answer = app.ask(Question("How long are backups kept?"))
        finally:
            app.close()
        prompts = server.prompts()
    munich, tape = answer.verdicts
    assert munich.label is Label.CONTRADICTED and munich.method != METHOD and "Berlin" in munich.reason
    if not enabled:
        assert len(prompts) == 1  # the draft only: no second-opinion request
        assert tape.label is Label.UNCERTAIN and tape.method != METHOD
        return
    assert len(prompts) == 2
    user = prompts[1][1]
    assert "moved to tape" in user and "Munich" not in user
    assert tape.label is Label.CONTRADICTED and tape.method == METHOD
    assert tape.conflict == "kept for 30 days on the storage server"
    assert tape.checked_against == ("kb",)
