"""`bot.app.build`: parts passed in replace the ones the settings would build and stay open after
`App.close`; without them, `build` makes every part from the settings and `close` closes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import build
from config.settings import load_settings
from pipeline.embed import Embedder
from pipeline.sentence_vectors import SentenceEmbedder
from pipeline.store import EmbeddedStore, StoreUnavailable
from pipeline.types import Question


class ScriptedLLM:
    """A stand-in for the remote LLM: one fixed reply; records the prompts and whether it was closed."""

    def __init__(self, reply: str):
        self.reply, self.prompts, self.closed = reply, [], False

    def complete(self, system: str, user: str, *, max_tokens: int = 700, json_mode: bool = False) -> str:
        self.prompts.append(user)
        return self.reply

    def close(self) -> None:
        self.closed = True


def test_parts_passed_in_are_the_ones_that_answer_and_stay_open(tmp_path, fake_embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vpn.md").write_text("# VPN\n\nThe VPN gateway is vpn.example.com; connect with the corporate client.\n")
    settings = load_settings(env={}, data_dir=str(tmp_path / "data"), sources=f"d={docs}", wikipedia="off",
                             verify=False, sentence_vectors=0)  # 0: the embedder itself answers, unwrapped
    store = EmbeddedStore(tmp_path / "shared.sqlite")
    llm = ScriptedLLM("The VPN gateway is vpn.example.com [1].")
    app = build(settings, run_scheduler=False, embedder=fake_embedder, store=store, llm=llm)
    assert app.parts.embedder is fake_embedder and app.parts.store is store and app.parts.llm is llm
    before = fake_embedder.texts_encoded
    app.index_one("d")
    answer = app.ask(Question("What is the VPN gateway?"))
    app.close()
    assert answer.text == "The VPN gateway is vpn.example.com [1]." and not answer.error
    assert [s.title for s in answer.sources] == ["VPN"]
    assert len(llm.prompts) == 1 and "What is the VPN gateway?" in llm.prompts[0]
    assert fake_embedder.texts_encoded - before == 2  # the one chunk, then the question
    assert not (settings.data_path / "index.sqlite").exists()  # no store of its own was opened
    assert store.counts()["documents"] == 1 and not llm.closed  # the caller's parts are still open
    store.close()


def test_without_parts_build_makes_them_from_the_settings_and_close_closes_them(tmp_path):
    settings = load_settings(env={}, data_dir=str(tmp_path / "data"), wikipedia="off")
    app = build(settings, run_scheduler=False)
    assert isinstance(app.parts.embedder, SentenceEmbedder) and isinstance(app.parts.embedder.embedder, Embedder)
    assert app.parts.sentence_vectors.path == settings.data_path / "sentences.sqlite"
    assert app.parts.llm is None and app.parts.wiki is None
    assert isinstance(app.parts.store, EmbeddedStore) and Path(app.parts.store.path) == settings.data_path / "index.sqlite"
    assert app.parts.store.counts()["documents"] == 0
    app.close()
    with pytest.raises(StoreUnavailable):
        app.parts.store.counts()
