"""The LLM seam: one `complete(system, user)` call to any OpenAI-compatible chat endpoint.

`OpenAIChat` talks to an OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp server,
...) through the official `openai` client; `bot.app.build_llm` makes one from the `llm_*` settings,
or none when no endpoint is configured (ravbot then answers extractively). Every failure (refused
connection, timeout, HTTP error after the client's bounded retries, a reply with no text,
a reply that is not JSON when JSON was asked for) surfaces as one `LLMError` whose message
names the endpoint and the cause, never the API key.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Protocol

import openai

log = logging.getLogger(__name__)


class LLMError(RuntimeError):
    """An LLM call failed; the message names the endpoint and the cause."""


class LLM(Protocol):
    def complete(
        self, system: str, user: str, *, max_tokens: int = 700, json_mode: bool = False
    ) -> str:
        """The model's reply to one system + user message pair (JSON text when `json_mode`)."""
        ...


class OpenAIChat:
    """A chat model behind an OpenAI-compatible endpoint; owns one `openai.OpenAI` client.

    Timeouts and retries are the client's own: `timeout` seconds per attempt and at most
    `max_retries` retries (with backoff, honouring Retry-After) of connection errors,
    timeouts, 408/409/429 and 5xx replies.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 30.0,
        max_retries: int = 2,
    ):
        if not base_url:
            raise ValueError("OpenAIChat needs a base_url (llm_base_url is empty)")
        if timeout <= 0:
            raise ValueError(f"llm timeout must be positive, got {timeout!r}")
        if max_retries < 0:
            raise ValueError(f"llm retries must be >= 0, got {max_retries!r}")
        self.base_url = base_url
        self.model = model
        self._secret = api_key
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",  # local servers (Ollama, llama.cpp) ignore the key
            timeout=timeout,
            max_retries=max_retries,
        )

    def complete(
        self, system: str, user: str, *, max_tokens: int = 700, json_mode: bool = False
    ) -> str:
        """The reply text; `json_mode` asks for a JSON object and checks that the reply parses."""
        extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
        try:
            response = self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                max_tokens=max_tokens,
                temperature=0,
                **extra,
            )
        except openai.APITimeoutError:
            raise self._error("timed out") from None
        except openai.APIConnectionError as e:
            raise self._error(f"cannot connect ({_cause(e)})") from None
        except openai.APIStatusError as e:
            raise self._error(f"HTTP {e.status_code}: {_short(e.message)}") from None
        except (openai.OpenAIError, ValueError, TypeError) as e:
            raise self._error(f"unreadable reply ({type(e).__name__}: {_short(str(e))})") from None
        text = _reply_text(response)
        if text is None:
            raise self._error("reply has no choices or no text")
        if json_mode:
            try:
                text = unfenced(text)
                json.loads(text)
            except ValueError:
                raise self._error(f"reply is not JSON: {_short(text)!r}") from None
        return text

    def close(self) -> None:
        self._client.close()

    def _error(self, cause: str) -> LLMError:
        if self._secret:
            cause = cause.replace(self._secret, "***")  # an error body may echo the key
        message = f"LLM endpoint {self.base_url} (model {self.model}): {cause}"
        log.warning(message)
        return LLMError(message)


def unfenced(text: str) -> str:
    """An LLM's reply without the Markdown code fence some models put around JSON (```json … ```)."""
    return re.sub(r"^```(?:json)?|```$", "", str(text).strip()).strip()


def read_json(text: str) -> Any:
    """The JSON value of an LLM's reply, fenced or not; ValueError when it is not JSON."""
    return json.loads(unfenced(text))


def _reply_text(response: Any) -> str | None:
    """The first choice's message text, or None when the reply carries none."""
    choices = getattr(response, "choices", None)
    if not choices:
        return None
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        return None
    return content


def _cause(error: BaseException) -> str:
    """The innermost cause of a connection error, e.g. 'ConnectError: Connection refused'."""
    while error.__cause__ is not None:
        error = error.__cause__
    return _short(f"{type(error).__name__}: {error}")


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
