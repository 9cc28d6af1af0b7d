"""HTML pages read as their readers see them (`pipeline.html`): navigation dropped, code as code,
definition lists as terms leading their descriptions, tables as rows, admonitions labelled."""

from __future__ import annotations

from pipeline.html import html_to_markdown
from pipeline.prose import prose_units

# The shape of a DocBook page (Valgrind's manual, the Linux and GNOME docs): a navigation table, a
# table of contents, sections, an option list, a screen dump, a note.
DOCBOOK = """<html><head><title>4.\xa0Memcheck: a memory error detector</title></head><body>
<div class="navheader"><table class="nav" summary="Navigation header"><tr><td><a href="a.html">Prev</a></td>
<th>Valgrind User Manual</th><td><a href="c.html">Next</a></td></tr></table></div>
<div class="chapter"><div class="titlepage"><h1 class="title">4. Memcheck</h1></div>
<div class="toc"><p><b>Table of Contents</b></p><dl class="toc"><dt><span class="sect1"><a href="#a">4.1. Overview</a></span></dt></dl></div>
<p>To use this tool, you may specify <code class="option">--tool=memcheck</code>
   on the Valgrind command line.</p>
<div class="sect1"><h2 class="title">4.3. Options</h2>
<div class="variablelist"><dl class="variablelist">
<dt><span class="term"><code class="option">--leak-check=&lt;no|summary|yes|full&gt; [default: summary] </code></span></dt>
<dd><p>When enabled, search for memory leaks when the client
   program finishes.</p><p>If set to <code class="varname">full</code>, each leak is shown.</p></dd>
<dt><span class="term"><code class="option">--num-callers=&lt;number&gt;</code></span></dt>
<dd><pre class="programlisting">valgrind --num-callers=40 ./prog</pre></dd>
</dl></div>
<pre class="screen">LEAK SUMMARY:
   definitely lost: 48 bytes in 3 blocks.</pre>
<div class="note"><h3 class="title">Note</h3><p>Leaks are only errors with <code>--leak-check=full</code>.</p></div>
<table><tr><th>Kind</th><th>Meaning</th></tr><tr><td>definite</td><td>no pointer to the block</td></tr></table>
<ul><li class="listitem"><p>Overlapping <code class="computeroutput">src</code> and
   <code class="computeroutput">dst</code> pointers.</p></li><li><p>Memory leaks.</p></li></ul>
</div></div>
<div class="navfooter"><a href="c.html">Next</a> 5. Cachegrind</div>
</body></html>"""


def rendered() -> str:
    return html_to_markdown(DOCBOOK)[0]


def test_navigation_and_tables_of_contents_are_dropped():
    text = rendered()
    assert "Prev" not in text and "Next" not in text and "Table of Contents" not in text
    assert "Valgrind User Manual" not in text and "Cachegrind" not in text
    assert "4.1. Overview" not in text


def test_the_title_and_headings_read_as_words():
    text, title = html_to_markdown(DOCBOOK)
    assert title == "4. Memcheck: a memory error detector"
    assert "# 4. Memcheck\n" in text and "## 4.3. Options" in text


def test_prose_is_one_line_with_code_as_code_spans():
    assert "To use this tool, you may specify `--tool=memcheck` on the Valgrind command line." in rendered()


def test_a_term_leads_its_description_and_code_blocks_stay_code():
    text = rendered()
    assert ("`--leak-check=<no|summary|yes|full> [default: summary]`: When enabled, search for memory leaks "
            "when the client program finishes.") in text
    assert "If set to `full`, each leak is shown." in text
    assert "```\nvalgrind --num-callers=40 ./prog\n```" in text
    assert "```\nLEAK SUMMARY:\n   definitely lost: 48 bytes in 3 blocks.\n```" in text  # whitespace kept in <pre>


def test_admonitions_tables_and_lists():
    text = rendered()
    assert "Note: Leaks are only errors with `--leak-check=full`." in text
    assert "- Kind: definite — Meaning: no pointer to the block" in text
    assert "- Overlapping `src` and `dst` pointers." in text and "- Memory leaks." in text


def test_the_extractive_answer_reads_sentences_not_screen_dumps():
    units = [u.text for u in prose_units(rendered())]
    assert "When enabled, search for memory leaks when the client program finishes." in " ".join(units)
    assert not any("definitely lost: 48 bytes" in u for u in units)


def test_sphinx_navigation_and_header_links_are_dropped():
    page = ("<html><body><div class='related' role='navigation'><a href='i.html'>index</a></div>"
            "<div class='body' role='main'><h1>Caching<a class='headerlink' href='#c'>¶</a></h1>"
            "<p>pip caches wheels.</p></div><div class='sphinxsidebar'><p>Quick search</p></div></body></html>")
    text, title = html_to_markdown(page)
    assert text == "# Caching\n\npip caches wheels."
    assert title == "Caching"


def test_a_plain_text_readme_keeps_its_lines_and_headings():
    page = ("<html><body><div class='chapter'><div class='literallayout'><p><br>\n      Requirements<br>\n"
            "------------<br>\n- You need a recent OS to compile this port. Solaris 11<br>\n  should work.<br>\n"
            "- Headers are required. Install them with:<br>\n    # pkg install system/header<br>\n<br>\n"
            "Compilation<br>\n-----------<br>\nFollow the README.<br>\n</p></div></div></body></html>")
    text = html_to_markdown(page)[0]
    assert "## Requirements\n\n- You need a recent OS to compile this port. Solaris 11\n  should work." in text
    assert "    # pkg install system/header" in text and "\n# pkg" not in text  # a prompt, not a heading
    assert "## Compilation\n\nFollow the README." in text
    units = [u.text for u in prose_units(text)]
    assert "You need a recent OS to compile this port." in units and "Follow the README." in units


def test_a_plain_text_readme_reads_double_dash_items_as_list_items():
    page = ("<html><body><div class='literallayout'><p><br>\nThe following notes may save you some trouble.<br>\n<br>\n"
            "--\xa0If your toolchain supports lto, using the configure<br>\n   option --enable-lto=yes will produce<br>\n"
            "   a faster valgrind.<br>\n<br>\n-- Do not strip ld.so.<br>\n</p></div></body></html>")
    text = html_to_markdown(page)[0]
    assert "- If your toolchain supports lto" in text and "- Do not strip ld.so." in text
    assert "option --enable-lto=yes" in text  # an option in the text keeps its dashes
    units = [u.text for u in prose_units(text)]
    assert "If your toolchain supports lto, using the configure option --enable-lto=yes will produce a faster valgrind." in units
    assert not any(u.startswith("--") for u in units)


def test_a_definition_term_that_is_a_sentence_runs_into_its_text():
    page = ("<html><body><dl><dt>Run it twice.</dt><dd><p>It helps.</p></dd>"
            "<dt><code>--x</code></dt><dd><p>Sets x.</p></dd><dt><code>RUNNING_ON_VALGRIND</code>:</dt><dd><p>Returns 1.</p></dd>"
            "<dt>Try again!</dt></dl></body></html>")
    assert html_to_markdown(page)[0].split("\n\n") == [
        "Run it twice. It helps.", "`--x`: Sets x.", "`RUNNING_ON_VALGRIND`: Returns 1.", "Try again!"]  # one colon, not two


def test_plain_text_files_read_underlined_headings_as_headings():
    from pipeline.markup import to_markdown

    text, _ = to_markdown("Install\n=======\n\nRun make.\n\n-----\n\nUsage\n-----\nRun it.\n\n-- Run it twice.\n", "text")
    assert "# Install\n\nRun make." in text and "## Usage\n\nRun it." in text and "-----" not in text
    assert "\n- Run it twice." in text


def test_a_page_of_several_articles_keeps_every_one():
    # A blog, changelog or search-results page has one <article> per entry and no <main>: only the
    # first entry used to be read.
    page = ("<html><head><title>Releases</title></head><body><nav>Home · Blog</nav>"
            "<article><h2>Release 2.1</h2><p>Adds the retry flag.</p></article>"
            "<article><h2>Release 2.0</h2><p>Drops Python 3.8.</p>"
            "<article><p>A comment on 2.0.</p></article></article>"
            "<footer>© the team</footer></body></html>")
    text, title = html_to_markdown(page)
    assert title == "Releases"
    assert text == ("## Release 2.1\n\nAdds the retry flag.\n\n## Release 2.0\n\nDrops Python 3.8.\n\n"
                    "A comment on 2.0.")
    # a <main> still wins: the articles around it are not the page's text
    text, _ = html_to_markdown("<body><article><p>Related post.</p></article><main><p>The page.</p></main></body>")
    assert text == "The page."
