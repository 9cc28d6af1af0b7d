"""Wikipedia evidence: the real `wikipedia` package against a local MediaWiki-compatible server."""

from __future__ import annotations

import pytest

from bot.app import build_wikipedia
from pipeline.wiki import (
    Page,
    WikipediaSource,
    WikipediaUnavailable,
    rank_passages,
    split_passages,
)
from tests.fakes.mediawiki import FakeMediaWiki


@pytest.fixture(scope="module")
def mini():
    """The whole wikipedia-mini corpus, served once for the module."""
    with FakeMediaWiki() as wiki:
        yield wiki


@pytest.fixture
def wiki():
    """A private server (for request counting and faults)."""
    with FakeMediaWiki() as w:
        yield w


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def source(tmp_path, server: FakeMediaWiki, **kw) -> WikipediaSource:
    return WikipediaSource(tmp_path / "wiki.sqlite", api_url=server.url, **({"timeout": 5.0} | kw))


def test_search_finds_the_article_sentence(tmp_path, mini):
    sentence = mini.articles["1938 New England hurricane"][1]
    claim = "The 1938 New England hurricane was the deadliest hurricane in New England history."
    found = source(tmp_path, mini).search_passages(claim)
    assert found, "no passages"
    best = found[0]
    assert best.origin == "wikipedia"
    assert best.title == "1938 New England hurricane"
    assert sentence in best.text
    assert best.url == mini.page_url("1938 New England hurricane")
    assert best.chunk_id.startswith("wikipedia:1938 New England hurricane#")
    assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)


def test_pages_limit_and_top(tmp_path, mini):
    found = source(tmp_path, mini).search_passages(
        "Arctic sea ice decline and Arctic Ocean", pages=2, top=50
    )
    assert 1 <= len({e.title for e in found}) <= 2
    assert mini.count("search") >= 1


def test_disambiguation_takes_the_first_option_that_loads(tmp_path, wiki):
    found = source(tmp_path, wiki).search_passages("Mercury is a chemical element.", pages=1)
    assert found
    assert {e.title for e in found} == {"Mercury (planet)"}
    # "Mercury" was a disambiguation page; "Mercury (element)" was tried and did not load
    assert [r.get("titles") for r in wiki.requests if "info" in r.get("prop", "")] == [
        "Mercury",
        "Mercury (element)",
        "Mercury (planet)",
    ]


def test_cache_hit_makes_no_request(tmp_path, wiki):
    claim = "Greenland ice sheet is melting."
    first = source(tmp_path, wiki).search_passages(claim)
    made = wiki.count()
    assert first and made > 0
    again = source(tmp_path, wiki).search_passages(claim)  # a new object: the cache is the file
    assert wiki.count() == made
    assert again == first


def test_cache_expires_after_ttl(tmp_path, wiki):
    clock = Clock()
    src = source(tmp_path, wiki, cache_hours=1, clock=clock)
    claim = "Greenland ice sheet is melting."
    src.search_passages(claim)
    made = wiki.count()
    clock.now += 1800
    src.search_passages(claim)
    assert wiki.count() == made  # within the hour: cached
    clock.now += 3600
    src.search_passages(claim)
    assert wiki.count("search") == 2  # expired: fetched again
    assert wiki.count() == 2 * made


def test_nothing_found_is_an_empty_list(tmp_path, wiki):
    assert source(tmp_path, wiki).search_passages("zzqx qqxz") == []
    assert source(tmp_path, wiki).search_passages("  [1] ") == []


def test_server_down_raises_quickly(tmp_path):
    wiki = FakeMediaWiki().start()
    url = wiki.url
    wiki.stop()
    src = WikipediaSource(tmp_path / "wiki.sqlite", api_url=url, timeout=3.0)
    with pytest.raises(WikipediaUnavailable, match=url):
        src.search_passages("Greenland ice sheet is melting.")


def test_http_500_raises(tmp_path, wiki):
    wiki.fail(500)
    with pytest.raises(WikipediaUnavailable, match="search"):
        source(tmp_path, wiki).search_passages("Greenland ice sheet is melting.")


def test_slow_server_hits_the_time_limit(tmp_path, wiki):
    wiki.slow(5.0)
    src = source(tmp_path, wiki, timeout=0.3)
    # the hard time limit and the client's read timeout are both 0.3 s: under load either may fire first
    with pytest.raises(WikipediaUnavailable, match=r"no reply within 0\.3s|read timeout=0\.3"):
        src.search_passages("Greenland ice sheet is melting.")
    assert wiki.count() == 1  # the search never answered, so no page was asked for


def test_slow_pages_return_what_loaded_in_time(tmp_path, wiki):
    src = source(tmp_path, wiki, timeout=0.5)
    src.search_passages("Greenland ice sheet", pages=1)  # caches the page "Greenland ice sheet"
    wiki.slow(5.0, kind="info")  # searches answer at once, page loads never in time
    found = src.search_passages("The Greenland ice sheet covers most of Greenland.", pages=3)
    assert found and {e.title for e in found} == {"Greenland ice sheet"}
    assert wiki.count("search") == 2


def test_build_wikipedia_from_settings(settings, wiki):
    assert build_wikipedia(settings.replace(wikipedia="off")) is None
    src = build_wikipedia(settings.replace(wikipedia_api_url=wiki.url, wikipedia_pages=2))
    assert src.pages == 2 and src.api_url == wiki.url
    assert src.cache_path.parent == settings.data_path
    assert src.search_passages("Greenland ice sheet is melting.")


def test_split_passages_known_values():
    content = "One. Two. Three. Four. Five.\n\n== History ==\nSix. Seven."
    assert split_passages(content) == ["One. Two. Three.", "Three. Four. Five.", "Six. Seven."]
    assert split_passages("") == []


def test_rank_passages_prefers_matching_text():
    pages = [
        Page("Alpha", "u1", "Cats sleep a lot. Dogs bark at night."),
        Page("Beta", "u2", "The reactor opened in 1974. It closed in 2011."),
    ]
    ranked = rank_passages("When did the reactor close?", pages, top=5)
    assert ranked[0].title == "Beta"
    assert all(e.title != "Alpha" for e in ranked)


def test_bad_values():
    with pytest.raises(ValueError, match="-1"):
        WikipediaSource("x.sqlite", timeout=-1)
    with pytest.raises(ValueError, match="0"):
        WikipediaSource("x.sqlite", pages=0)
