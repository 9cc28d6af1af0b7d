"""The LLM seam: the real `openai` client against a local OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from bot.app import build_llm
from pipeline.llm import LLMError, OpenAIChat
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def server():
    with FakeOpenAI() as s:
        yield s


def chat(server: FakeOpenAI, **kw) -> OpenAIChat:
    options = {"model": "fake-model", "api_key": "sk-test-secret", "timeout": 5.0, "max_retries": 2}
    return OpenAIChat(server.url, **(options | kw))


def test_no_endpoint_means_no_llm(settings):
    assert build_llm(settings) is None


def test_build_llm_uses_the_settings(settings, server):
    server.reply("hello")
    llm = build_llm(settings.replace(llm_base_url=server.url, llm_model="m1", llm_api_key="k1"))
    assert llm.complete("sys", "hi") == "hello"
    sent = server.requests[0]
    assert sent.body["model"] == "m1"
    assert sent.headers["authorization"] == "Bearer k1"


def test_scripted_reply_and_the_request_sent(server):
    server.reply("Ravbot reindexes every hour [1].")
    text = chat(server).complete("Answer only from the context.", "When? [1] docs", max_tokens=123)
    assert text == "Ravbot reindexes every hour [1]."
    assert server.prompts() == [("Answer only from the context.", "When? [1] docs")]
    body = server.requests[0].body
    assert body["max_tokens"] == 123
    assert "response_format" not in body


def test_empty_key_sends_a_placeholder(server):
    server.reply("ok")
    assert chat(server, api_key="").complete("s", "u") == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_rate_limit_then_success_is_retried(server):
    server.error(429).reply("after retry")
    assert chat(server).complete("s", "u") == "after retry"
    assert len(server.requests) == 2


def test_server_error_after_bounded_retries(server):
    for _ in range(3):
        server.error(500, "upstream exploded")
    with pytest.raises(LLMError) as info:
        chat(server, max_retries=2).complete("s", "u")
    assert len(server.requests) == 3  # one try + two retries, no more
    message = str(info.value)
    assert server.url in message and "500" in message
    assert "sk-test-secret" not in message


def test_client_error_is_not_retried(server):
    server.error(401, "bad key sk-test-secret")
    with pytest.raises(LLMError, match="401") as info:
        chat(server).complete("s", "u")
    assert len(server.requests) == 1
    assert "sk-test-secret" not in str(info.value)


def test_timeout_raises_llm_error(server):
    server.slow(3.0, "too late").slow(3.0, "too late")
    with pytest.raises(LLMError, match="timed out"):
        chat(server, timeout=0.3, max_retries=1).complete("s", "u")
    assert len(server.requests) == 2


def test_connection_refused_names_the_endpoint():
    server = FakeOpenAI().start()
    url = server.url
    server.stop()
    with pytest.raises(LLMError, match="cannot connect") as info:
        OpenAIChat(url, "m", timeout=2.0, max_retries=0).complete("s", "u")
    assert url in str(info.value)


@pytest.mark.parametrize("fault", ["malformed", "empty_choices", "empty_content"])
def test_malformed_replies_raise(server, fault):
    getattr(server, fault)()
    with pytest.raises(LLMError) as info:
        chat(server, max_retries=0).complete("s", "u")
    assert server.url in str(info.value)


def test_json_mode_asks_for_json_and_checks_it(server):
    server.reply('{"label": "supported", "evidence": 2}')
    text = chat(server).complete("s", "u", json_mode=True)
    assert json.loads(text) == {"label": "supported", "evidence": 2}
    assert server.requests[0].body["response_format"] == {"type": "json_object"}

    server.reply('```json\n{"label": "unknown"}\n```')  # some models fence their JSON
    assert chat(server).complete("s", "u", json_mode=True) == '{"label": "unknown"}'

    server.reply("Sure! The claim is supported.")
    with pytest.raises(LLMError, match="not JSON"):
        chat(server).complete("s", "u", json_mode=True)


def test_fallback_responder_sees_the_request(server):
    server.respond_with(lambda body: body["messages"][-1]["content"].upper())
    assert chat(server).complete("s", "echo me") == "ECHO ME"


def test_bad_construction_values():
    with pytest.raises(ValueError, match="base_url"):
        OpenAIChat("", "m")
    with pytest.raises(ValueError, match="-1"):
        OpenAIChat("http://127.0.0.1:9/v1", "m", max_retries=-1)
