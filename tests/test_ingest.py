"""Ingestion: formats normalised to headings + paragraphs; bad files reported and skipped, never fatal."""

from __future__ import annotations

import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.ingest import TITLE_LIMIT, LoadReport, _add, load_source
from pipeline.markup import to_markdown


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "guide.md").write_text("# Backups\n\nWe keep backups for 30 days.\n")
    (d / "notes.txt").write_text("Plain notes about the VPN.\n")
    (d / "page.html").write_text("<html><head><title>On-call</title><script>x()</script></head><body><nav>menu</nav>"
                                 "<main><h2>Rota</h2><p>Alice is on call in March.</p></main></body></html>")
    (d / "sub" / "howto.rst").write_text("Deploying\n=========\n\nRun the deploy script.\n\nRollback\n--------\n\nUse the previous tag.\n")
    (d / "empty.md").write_text("")
    (d / "binary.md").write_bytes(b"\x00\x01\x02garbage")
    (d / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (d / "huge.md").write_text("x" * 2000)
    (d / "ignored.pdf").write_bytes(b"%PDF")
    (d / ".hidden.md").write_text("# secret\n\nhidden")
    return d


def test_folder_loads_every_format_and_reports_bad_files(folder):
    report = load_source("team", [str(folder)], max_bytes=1000)
    titles = sorted(d.title for d in report.documents)
    assert titles == ["Backups", "Deploying", "On-call", "notes"]
    html = next(d for d in report.documents if d.title == "On-call")
    assert "## Rota" in html.text and "Alice is on call in March." in html.text
    assert "menu" not in html.text and "x()" not in html.text
    rst = next(d for d in report.documents if d.title == "Deploying")
    assert "# Deploying" in rst.text and "## Rollback" in rst.text
    skipped = {os.path.basename(p): why for p, why in report.skipped}
    assert set(skipped) == {"empty.md", "binary.md", "latin1.txt", "huge.md"}
    assert "empty" in skipped["empty.md"] and "binary" in skipped["binary.md"]
    assert "UTF-8" in skipped["latin1.txt"] and "limit" in skipped["huge.md"]
    assert all(d.source == "team" and d.modified > 0 and d.id.startswith("team:") for d in report.documents)


def test_missing_folder_is_reported_not_raised(tmp_path):
    report = load_source("x", [str(tmp_path / "nope")])
    assert report.documents == [] and report.skipped == [(str(tmp_path / "nope"), "does not exist")]


def test_unreadable_file_is_skipped(folder):
    if os.geteuid() == 0:
        # root reads anything; make the file unreadable by making it a directory-named file instead
        bad = folder / "unreadable.md"
        bad.mkdir()
        (bad / "inner.txt").write_text("still indexed")
        report = load_source("team", [str(folder)], max_bytes=1000)
        assert any(d.title == "inner" for d in report.documents)
    else:
        bad = folder / "locked.md"
        bad.write_text("# Locked\n\ntext")
        bad.chmod(0)
        report = load_source("team", [str(folder)], max_bytes=1000)
        assert any(p.endswith("locked.md") for p, _ in report.skipped)


def test_a_page_nested_deeper_than_python_recurses_is_read_and_the_others_too(tmp_path):
    # 3,000 nested <div>s overflowed the converter's recursion; the RecursionError escaped
    # load_source, and no document of the source could be indexed.
    (tmp_path / "deep.html").write_text("<html><body>" + "<div>" * 3000 + "<p>The VPN key rotates monthly.</p>"
                                        + "</div>" * 3000 + "<p>Ask #it-help.</p></body></html>")
    (tmp_path / "guide.md").write_text("# Guide\n\nBackups are kept for 30 days.\n")
    report = load_source("team", [str(tmp_path)])
    assert report.skipped == []
    deep = next(d for d in report.documents if d.path.endswith("deep.html"))
    assert deep.text == "The VPN key rotates monthly.\n\nAsk #it-help."
    assert any(d.title == "Guide" for d in report.documents)


def test_a_parser_failure_skips_its_document_with_the_reason():
    report = LoadReport()

    def broken():
        raise KeyError("tbody")

    _add(report, "docs/odd.html", broken)
    assert report.documents == []
    assert report.skipped == [("docs/odd.html", "could not be read (KeyError: 'tbody')")]


def test_titles_are_one_line_and_bounded(tmp_path):
    (tmp_path / "a.html").write_text("<html><head><title>On-call\n\n   rota </title></head><body><p>Alice.</p></body></html>")
    (tmp_path / "b.html").write_text(f"<html><head><title>{'Runbook ' * 1000}</title></head><body><p>Bob.</p></body></html>")
    (tmp_path / "c.md").write_text("---\ntitle: |\n  Two\n  lines\n---\nBody text.\n")
    titles = {os.path.basename(d.path): d.title for d in load_source("team", [str(tmp_path)]).documents}
    assert titles["a.html"] == "On-call rota" and titles["c.md"] == "Two lines"
    assert len(titles["b.html"]) == TITLE_LIMIT and titles["b.html"].startswith("Runbook Runbook")
    assert titles["b.html"].endswith("…") and "\n" not in titles["b.html"]


def test_markdown_titles():
    assert to_markdown("# Hello\n\nworld", "markdown") == ("# Hello\n\nworld", "Hello")


def test_web_pages_and_sitemaps_over_a_real_socket(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text("<html><head><title>Page A</title></head><body><p>Alpha facts.</p></body></html>")
    (site / "b.html").write_text("<html><body><h1>Page B</h1><p>Beta facts.</p></body></html>")
    handler = lambda *a, **k: SimpleHTTPRequestHandler(*a, directory=str(site), **k)  # noqa: E731
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    (site / "sitemap.xml").write_text(f"<urlset><url><loc>{base}/a.html</loc></url><url><loc>{base}/b.html</loc></url>"
                                      f"<url><loc>{base}/missing.html</loc></url></urlset>")
    try:
        report = load_source("web", [f"{base}/sitemap.xml"], timeout=5)
    finally:
        server.shutdown()
    assert sorted(d.title for d in report.documents) == ["Page A", "Page B"]
    assert all(d.domain == f"127.0.0.1:{server.server_port}" and d.url.startswith(base) for d in report.documents)
    assert [p for p, _ in report.skipped] == [f"{base}/missing.html"]
