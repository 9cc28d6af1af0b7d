"""Documentation sites as they are: front matter, template tags, admonitions, tables and code read as
the published page shows them; extractive answers in whole sentences; links and timings per platform;
the citation check changing nothing but invented markers."""

from __future__ import annotations

import re

import pytest

from adapters import discord as discord_adapter
from adapters import slack as slack_adapter
from adapters.cli import answer_to_text
from adapters.render import links
from pipeline.answer import Parts, answer_question
from pipeline.chunking import chunk_document, sections, split_sentences
from pipeline.citations import check_citations, cited_ids
from pipeline.embed import Embedder
from pipeline.generate import (
    answer_types,
    generate_extractive,
    has_value,
    number_sources,
)
from pipeline.ingest import load_source
from pipeline.markup import Site, split_front_matter, to_markdown
from pipeline.prose import prose_units
from pipeline.types import Answer, Document, Hit, Question, Source

JEKYLL = """---
title: Code Hosting
permalink: /tools/code-hosting/
keywords: [git]
---

Code hosting is where we keep our repositories. See the
[introduction]({% page "/intro-to-code/" %}) first.

{% include "warning-box.html"
  level: high %}

## Getting access

To get access, go to {% slack_channel "admins-code" %} and say what you need.
{% alert %}
  Contractors use this <a href="https://forms.example.org/access">access form</a> instead.
{% endalert %}

<!-- reviewers: keep this section short -->
**Note:** _Access requests are reviewed within 2 business days._

{{ site.footer }}
"""

MKDOCS = """
The widget server can be embedded in any application.

## Using widgets

Configure it in code:

```python
from widgets import Server

# Ensure that every request carries an 'example.org' or
# '*.example.org' host header.
server = Server(hosts=["example.org"])
```

!!! note
    The `hosts` argument is not supported with sockets. The default port
    is always used for those.

??? info "Buffering"
    On slow links the server buffers each response before sending it.

??? abstract "API Reference"
    ::: widgets.Server
        options:
            show_root_heading: true

:::tip[Tuning]
Raise `workers` to serve more requests. See [the tuning guide](tuning.md#threads).
:::

{{< note >}}
Hugo shortcodes are read too; see [the install page]({{< ref "install.md" >}}).
{{< /note >}}
"""

TABLE = """# Review dates

This page lists the review dates.

| Due date | Item |
| -------- | ---- |
| November 14, 2025 | Official due date to close out the plans |
| December 10, 2025 | Awards are issued (approximate) |
"""


@pytest.fixture
def site_folder(tmp_path):
    root = tmp_path / "site"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "code-hosting.md").write_text(JEKYLL)
    (root / "widgets.md").write_text(MKDOCS)
    (root / "reviews").mkdir()
    (root / "reviews" / "dates.md").write_text(TABLE)
    return root


def _docs(root, **site) -> dict[str, Document]:
    report = load_source("site", [str(root)], **site)
    assert not report.skipped
    return {d.path.removeprefix("site/"): d for d in report.documents}


def test_jekyll_front_matter_and_liquid_tags_become_the_page_as_published(site_folder):
    doc = _docs(site_folder, url_base="https://docs.example.gov/", url_pattern="{stem}/")["tools/code-hosting.md"]
    assert doc.title == "Code Hosting"
    assert doc.url == "https://docs.example.gov/tools/code-hosting/"  # the permalink
    text = doc.text
    assert "keywords" not in text and "---" not in text
    assert "[introduction](https://docs.example.gov/intro-to-code/)" in text
    assert "go to #admins-code and say what you need" in text
    assert "[access form](https://forms.example.org/access)" in text
    assert "Note: Access requests are reviewed within 2 business days." in text
    assert not re.search(r"\{[%{]|[%}]\}|<!--|reviewers|<a |\*\*|warning-box|level: high", text)


def test_without_url_base_links_are_source_relative_never_server_paths(site_folder):
    docs = _docs(site_folder)
    assert set(docs) == {"tools/code-hosting.md", "widgets.md", "reviews/dates.md"}
    assert all(d.url == "" and d.path.startswith("site/") for d in docs.values())  # the folder, then the path in it
    assert "[the tuning guide](site/tuning.md#threads)" in docs["widgets.md"].text
    assert "[the install page](site/install.md)" in docs["widgets.md"].text
    site = Site("https://docs.example.gov", "{stem}/")
    assert site.resolve("../tuning.md#threads", "guide/widgets.md") == "https://docs.example.gov/tuning/#threads"
    assert site.resolve("#top", "guide/index.md") == "https://docs.example.gov/guide/#top"
    assert Site().resolve("/site/path/", "a.md") == ""  # a site path means nothing without a url_base


def test_mkdocs_page_code_comments_are_never_titles_and_admonitions_read_as_text(site_folder):
    doc = _docs(site_folder)["widgets.md"]
    assert doc.title == "Widgets"  # no `#` heading: the file's name, never the code comment
    text = doc.text
    assert "# Ensure that every request carries" in text  # the code block is kept as it is
    assert [h for h, _ in sections(text)] == [(), ("Using widgets",)]
    assert "Note: The `hosts` argument is not supported with sockets." in text
    assert "Buffering: On slow links the server buffers" in text
    assert "Tuning: Raise `workers` to serve more requests." in text
    assert "Hugo shortcodes are read too" in text
    assert not re.search(r"!!!|\?\?\?|:::|API Reference|show_root_heading|\{\{", text)
    for chunk in chunk_document(doc, size=200, overlap=60):
        assert "Ensure that every request" not in " ".join(chunk.headings) + chunk.title


def test_tables_become_header_cell_rows(site_folder):
    doc = _docs(site_folder)["reviews/dates.md"]
    assert "- Due date: November 14, 2025 — Item: Official due date to close out the plans" in doc.text
    assert "|" not in doc.text and "----" not in doc.text


def test_an_html_table_in_a_markdown_page_becomes_header_cell_rows():
    page = ("## Keybindings\n\nThe readline interface knows these keys.\n\n<table>\n  <tr>\n    <th>Keys</th>\n"
            "    <th>Action</th>\n    <th>Notes</th>\n  </tr>\n  <tr>\n    <td><kbd>Ctrl</kbd>+<kbd>C</kbd></td>\n"
            "    <td>Emit <code>SIGINT</code> or close the\n    interface</td>\n    <td></td>\n  </tr>\n  <tr>\n"
            "    <td><kbd>Ctrl</kbd>+<kbd>Z</kbd></td>\n    <td>Emit <code>SIGTSTP</code></td>\n"
            "    <td>Doesn't work on Windows</td>\n  </tr>\n</table>\n\nAfter the table.\n")
    text = to_markdown(page, "markdown", rel="readline.md")[0]
    assert "- Keys: `Ctrl`+`C` — Action: Emit `SIGINT` or close the interface\n" in text
    assert "- Keys: `Ctrl`+`Z` — Action: Emit `SIGTSTP` — Notes: Doesn't work on Windows" in text
    assert "Keys Action Notes" not in text and "<t" not in text
    assert text.endswith("After the table.")


def test_front_matter_toml_and_unreadable_yaml():
    assert split_front_matter('+++\ntitle = "Hugo page"\nurl = "/x/"\n+++\nBody')[0] == {"title": "Hugo page", "url": "/x/"}
    meta, rest = split_front_matter("---\n: : bad [yaml\n---\nBody text")
    assert meta == {} and rest == "Body text"
    assert to_markdown("---\ntitle: From front matter\n---\n# Heading\n\ntext", "markdown")[1] == "From front matter"
    assert to_markdown("Plain `*not emphasis*` and *emphasis*.", "markdown")[0] == "Plain `*not emphasis*` and emphasis."
    assert to_markdown("> **Only** approved tools.\n> > Nested quote.", "markdown")[0] == "Only approved tools.\nNested quote."



def test_reference_links_resolve_from_anywhere_on_the_page():
    page = ("Use the [OpenAPI\nspecification][openapi] or the [guide][].\n\n"
            "```python\n[not]: a definition inside code\n```\n\n"
            "See [nothing][missing].\n\n[openapi]: https://example.org/openapi\n[Guide]: guide.md \"Title\"\n")
    text = to_markdown(page, "markdown", rel="docs/schemas.md")[0]
    assert "Use the [OpenAPI specification](https://example.org/openapi) or" in text
    assert "[guide](docs/guide.md)" in text
    assert "See nothing." in text  # an undefined reference is its text
    assert "[openapi]:" not in text and "[Guide]:" not in text
    assert "[not]: a definition inside code" in text  # code blocks are untouched


def test_shortcut_reference_links_resolve_and_other_brackets_stay():
    page = ("Use [the Git Protocol], or open an issue on the [truststore GitHub\nissue tracker].\n\n"
            "Run `valgrind [args]` with [kernel variant args] and --[no-]edit; see [^1] and ![logo].\n\n"
            "[the git protocol]: https://git-scm.com/book\n[truststore github issue tracker]:\n  https://example.org/issues\n"
            "[logo]: logo.png\n")
    text = to_markdown(page, "markdown")[0]
    assert "Use [the Git Protocol](https://git-scm.com/book), or" in text
    assert "[truststore GitHub issue tracker](https://example.org/issues)" in text
    assert "`valgrind [args]` with [kernel variant args] and --[no-]edit; see [^1]" in text  # no definition: as written
    assert text.count("https://example.org/issues") == 1 and "protocol]:" not in text  # definitions are gone
    assert "![logo]" not in text and "logo.png" not in text  # an image by reference is dropped, as inline ones are

# --------------------------------------------------------------------------- extractive answers

LEAVE = """# Leave

Annual leave accrues every pay period. You can carry over at most 240 hours of annual leave from one
leave year to the next. Hours above the limit are forfeited at the end of the leave year. Use or lose
leave must be scheduled before the third pay period from the end of the year. Ask your supervisor
before you schedule long absences. As noted above, there is a 240 hour limit on the number of hours
you can carry over from one leave year to the next.

To request leave:

- Open the time system.
- Choose the leave type.
- Submit the request to your supervisor.
"""


def _hits(doc: Document, size: int = 300, overlap: int = 150) -> tuple[list[Hit], dict[str, int]]:
    chunks = chunk_document(doc, size=size, overlap=overlap)
    hits = [Hit(chunk=c, score=1.0 - i / 10) for i, c in enumerate(chunks)]
    return hits, number_sources(hits)[1]


def _sentences(answer: str) -> list[str]:
    return [s.strip() for s in re.split(r"\s*\[\d+\]", answer) if s.strip()]


def test_extractive_answer_is_whole_sentences_never_twice(embedder):
    doc = Document(id="kb:leave", source="kb", title="Leave", text=LEAVE, path="leave.md")
    hits, numbers = _hits(doc)
    assert len(hits) > 2  # overlapping chunks
    answer = generate_extractive("How many hours of leave can I carry over?", hits, numbers, embedder, sentences=3)
    whole = {s for _, body in sections(LEAVE) for s in split_sentences(" ".join(body.split()))} | {
        u.text for h in hits for u in prose_units(h.chunk.text)}
    said = _sentences(answer)
    assert said and all(s in whole for s in said)
    assert "240 hours" in said[0]
    words = [frozenset(re.findall(r"[a-z0-9]+", s.lower())) for s in said]
    assert all(len(a & b) / min(len(a), len(b)) < 0.8 for i, a in enumerate(words) for b in words[i + 1:])


def test_a_list_keeps_its_lead_in(embedder):
    doc = Document(id="kb:leave", source="kb", title="Leave", text=LEAVE, path="leave.md")
    hits, numbers = _hits(doc, size=800, overlap=0)
    answer = generate_extractive("Which leave type do I choose in the time system?", hits, numbers, embedder, sentences=1)
    assert "To request leave: [1]\n" in answer and "\nChoose the leave type. [1]" in answer
    options = Document(id="kb:opts", source="kb", title="Options", path="opts.md",
                       text="The following arguments are supported:\n\n* `minimum_size` - Do not compress responses smaller than this. Defaults to `500`.\n* `level` - The compression level, from 1 to 9.\n")
    hits, numbers = _hits(options, size=800, overlap=0)
    answer = generate_extractive("What is the default minimum size?", hits, numbers, embedder, sentences=1)
    assert "The following arguments are supported: [1]" in answer and "Defaults to `500`. [1]" in answer


def test_answer_types_and_values():
    assert answer_types("How long are backups kept?") == ["duration"]
    assert "number" in answer_types("How many hours can I carry over?")
    assert answer_types("When does the cycle begin?") == ["date"]
    assert answer_types("Which version added WebSockets?") == ["version"]
    assert answer_types("What is the default port?") == ["default"]
    assert has_value("Backups are kept for 30 days.", ["duration"]) and not has_value("Backups are kept.", ["duration"])
    assert has_value("The cycle begins on October 1, 2024.", ["date"])
    assert has_value("WebSockets arrived in 0.13.2.", ["version"])
    assert has_value("The port defaults to `8000`.", ["default"]) and not has_value("Defaults are sane.", ["default"])


def test_check_citations_removes_invented_markers_and_changes_nothing_else():
    text = ("Secrets are read from a .env file and the .netrc file [1] , see [2].\n"
            "  Values  like  3 . 5 stay [1, 2] as written [9].\n[7] Next line [1][8] ends ; here [2,9]. ")
    cleaned, invented = check_citations(text, {1, 2})
    assert cleaned == ("Secrets are read from a .env file and the .netrc file [1] , see [2].\n"
                       "  Values  like  3 . 5 stay [1, 2] as written.\nNext line [1] ends ; here [2]. ")
    assert invented == [9, 7, 8, 9]
    assert check_citations(text.replace("[9]", "").replace("[7] ", "").replace("[8]", "").replace("2,9", "2"), {1, 2})[0] == \
        text.replace("[9]", "").replace("[7] ", "").replace("[8]", "").replace("2,9", "2")


def test_check_citations_leaves_code_alone():
    text = ('Match dates with `[0-9]{4}` or read `hosts[0]` [1] [9].\n\n```python\n'
            'regex = "[0-9]{4}-[0-9]{2}"\nfirst = hosts[0]  # [3]\n```\nAfter the block [3].\n```\nunclosed [4]')
    cleaned, invented = check_citations(text, {1})
    assert cleaned == text.replace(" [9]", "").replace("block [3]", "block")
    assert invented == [9, 3]
    assert cited_ids(text) == {1, 9, 3}


# --------------------------------------------------------------------------- links and timings per platform

LINKED = Answer(question="q", text="Ask in [the access form](https://forms.example.org/a?b=1&c=2) or see [tuning](tuning.md) [1].",
                sources=(Source(id=1, title="Access", path="tools/access.md"),), timings={"load": 900.0, "retrieve": 12.0})


def test_links_are_written_per_platform():
    terminal = answer_to_text(LINKED)
    assert "the access form (https://forms.example.org/a?b=1&c=2)" in terminal and "tuning (tuning.md)" in terminal
    assert "](" not in terminal and "load 900 ms · retrieve 12 ms" in terminal
    blocks, fallback = slack_adapter.render_answer(LINKED)
    body = blocks[0]["text"]["text"]
    assert "<https://forms.example.org/a?b=1&amp;c=2|the access form>" in body and "see tuning [1]" in body
    assert "retrieve" not in fallback and "900 ms" not in fallback  # no timings in posts unless show_timings
    assert "retrieve 12 ms" in slack_adapter.render_answer(LINKED, show_timings=True)[1]
    text = discord_adapter.answer_text(LINKED)
    assert "the access form (<https://forms.example.org/a?b=1&c=2>)" in text and "see tuning [1]" in text
    assert links("a [x](javascript:alert) b", link=lambda u, w: "LINK", web_only=True) == "a x b"


def test_loading_the_model_is_its_own_timing(tmp_path, embedder, settings):
    from bot.app import build_store, stage_options
    from pipeline.index import index_documents

    doc = Document(id="kb:leave", source="kb", title="Leave", text=LEAVE, path="leave.md")
    store = build_store(settings)
    index_documents(store, embedder, "kb", [doc])
    fresh = Embedder(embedder.name)  # not loaded yet
    parts = Parts(store=store, embedder=fresh, options=stage_options(settings.replace(verify=False)))
    first = answer_question(Question("How many hours of leave can I carry over?"), parts)
    second = answer_question(Question("How do I request leave?"), parts)
    assert "load" in first.timings and "retrieve" in first.timings and "load" not in second.timings
    store.close()


def test_content_tabs_and_titled_containers_lead_with_their_titles():
    # MkDocs' `=== "Title"` tabs indent their body four spaces: read raw, the "Do" and "Don't"
    # examples of a page became one indented code block under two stray `===` lines.
    page = '''# Middleware

=== "✅ Do"

    ```python
    self.state = {}
    ```

=== "❌ Don't"

    Keep per-request data on the instance: it leaks across requests.
'''
    text = to_markdown(page, "markdown")[0]
    assert "===" not in text
    assert "✅ Do:\n\n```python\nself.state = {}\n```" in text
    assert "❌ Don't: Keep per-request data on the instance: it leaks across requests." in text
    myst = to_markdown("# Setup\n\n```{tab-item} Windows\nRun winget install foo.\n```\n\n"
                       "```{dropdown} Advanced\nSet retries to 7.\n```\n", "markdown")[0]
    assert "Windows: Run winget install foo." in myst and "Advanced: Set retries to 7." in myst
