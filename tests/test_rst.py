"""reStructuredText (Sphinx) pages as a reader of the rendered page sees them: known values per construct."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pipeline.ingest import load_file
from pipeline.markup import to_markdown
from pipeline.rst import rst_to_markdown

PAGE = """\
.. _`the page`:

add_library
-----------

.. only:: html

   .. contents::

Add a library named ``<name>``, see :command:`target_link_libraries` and
:prop_tgt:`POSITION_INDEPENDENT_CODE <POSITION_INDEPENDENT_CODE>` or the
:ref:`Object Libraries <object-libs>` section and :manual:`cmake-buildsystem(7)`.

.. code-block:: cmake
   :caption: example

  add_library(archive STATIC a.cpp)

.. versionadded:: 3.11
  The source files can be omitted.

.. note::
   Interface libraries compile nothing.

.. this is a comment
   spanning two lines

Options
^^^^^^^

.. option:: -S <path-to-source>

  Path to the root directory of the project.

Run it like this::

  cmake -S . -B build
"""


def render(text: str) -> str:
    return to_markdown(text, "rst", "cmd/add_library.rst")[0]


def test_a_sphinx_page_renders_as_its_reader_sees_it():
    out, title = to_markdown(PAGE, "rst", "cmd/add_library.rst")
    assert title == "add_library"
    assert out.startswith("# add_library\n")
    assert "Add a library named `<name>`, see `target_link_libraries` and\n`POSITION_INDEPENDENT_CODE` or the\n" \
           "Object Libraries section and cmake-buildsystem(7)." in out
    assert "```cmake\nadd_library(archive STATIC a.cpp)\n```" in out and ":caption:" not in out
    assert "New in version 3.11: The source files can be omitted." in out
    assert "Note: Interface libraries compile nothing." in out
    assert "## Options" in out
    assert "`-S <path-to-source>`: Path to the root directory of the project." in out
    assert "Run it like this:\n\n```\ncmake -S . -B build\n```" in out
    prose = re.sub(r"```.*?```", "", out, flags=re.S)
    for raw in (".. ", "::", ":command:", "``", "comment", "contents", "the page"):
        assert raw not in prose, raw


def test_links_lists_and_definitions():
    text = ("See `the guide <https://example.org/guide>`_ and `Named`_ [#]_ for |project|.\n\n"
            "* first item\n  continued\n* .. versionadded:: 3.6\n    second item\n\n"
            "#. numbered\n\n"
            "Source Tree\n  The top-level directory.\n")
    out = render(text)
    assert "See [the guide](https://example.org/guide) and Named for project." in out
    assert "* first item\n  continued" in out
    assert "* New in version 3.6: second item" in out
    assert "1. numbered" in out
    assert "Source Tree: The top-level directory." in out


def test_a_term_that_is_a_sentence_runs_into_its_text():
    # a list item whose text is indented one step further than its first line reads, as docutils
    # reads it, as a definition: its term a sentence of its own, never "platforms.: This …"
    text = ("#. Download a package supporting one of several ABIs and platforms.\n"
            "    This is useful when fetching wheels.\n\n"
            "Source Tree\n  The top-level directory.\n\nThe end.\n  \n")
    out = render(text)
    assert "1. Download a package supporting one of several ABIs and platforms. This is useful when fetching wheels." in out
    assert ".:" not in out and "Source Tree: The top-level directory." in out
    # a term in code that ends in dots is no sentence: "`--skip=a,b,...`: …"
    assert "`--skip=a,b,...`: Skips them." in render("``--skip=a,b,...``\n  Skips them.\n")


def test_tables_become_one_item_per_row():
    simple = "=====  =========\nName   Default\n=====  =========\njobs   ``4``\nquiet  off\n=====  =========\n"
    assert render(simple).split() == "- Name: jobs — Default: `4` - Name: quiet — Default: off".split()
    grid = "+------+---------+\n| Name | Default |\n+======+=========+\n| jobs | 4       |\n+------+---------+\n"
    assert "- Name: jobs — Default: 4" in render(grid)


def test_section_titles_and_code_roles():
    assert rst_to_markdown("=====\nTitle\n=====\n\nSub\n---\n\ntext") == "# Title\n\n## Sub\n\ntext"
    out = rst_to_markdown(":func:`~pkg.mod.run`, :class:`!Plain`, :pep:`8`, :guilabel:`&Cancel`")
    assert out == "`run`, `Plain`, PEP 8, Cancel"
    # a title underline inside code is code
    assert "# " not in rst_to_markdown(".. code-block:: text\n\n  Title\n  =====\n")


def test_includes_are_read_from_inside_the_source_only(tmp_path):
    root = tmp_path / "docs"
    (root / "cmd").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "NOTE.txt").write_text("Shared text about linkers.\n")
    (tmp_path / "secret.txt").write_text("password=hunter2\n")
    page = root / "cmd" / "page.rst"
    page.write_text("Page\n====\n\n.. include:: ../include/NOTE.txt\n\n.. include:: ../../secret.txt\n\n"
                    ".. include:: /include/NOTE.txt\n\n.. include:: missing.txt\n\nEnd.\n")
    doc = load_file(page, "kb", root=root)
    assert doc.text.count("Shared text about linkers.") == 2
    assert "hunter2" not in doc.text and "include::" not in doc.text and doc.text.rstrip().endswith("End.")


def test_an_include_of_itself_stops():
    assert rst_to_markdown("A\n\n.. include:: self.rst\n", include=lambda name: "A\n\n.. include:: self.rst\n").count("A") == 4


@given(st.lists(st.from_regex(r"[A-Za-z0-9 ,;!?'()-]{0,60}", fullmatch=True), max_size=30))
def test_plain_prose_keeps_every_word(lines: list[str]):
    text = "\n".join(lines)
    assert set(re.findall(r"\w+", text)) <= set(re.findall(r"\w+", rst_to_markdown(text)))


def test_notes_on_one_line_references_to_sections_and_list_tables():
    text = (".. _json_content:\n\nJSON Content\n~~~~~~~~~~~~\n\nSee :ref:`json_content` and :ref:`other`.\n\n"
            ".. note:: For larger responses, stream\n    the response.\n\n"
            ".. list-table::\n   :header-rows: 1\n\n   * - Name\n     - Default\n   * - jobs\n     - 4,\n       or more\n")
    out = render(text)
    assert "See JSON Content and other." in out  # an unknown label shows as written
    assert "Note: For larger responses, stream\nthe response." in out
    assert "- Name: jobs — Default: 4, or more" in out


def test_directive_names_are_read_in_any_case():
    out = render(".. WARNING:: PowerShell may alter the encoding of piped output.\n\n.. Note:: Quote the path.\n")
    assert "Warning: PowerShell may alter the encoding of piped output." in out and "Note: Quote the path." in out


def test_a_version_note_opening_a_terms_text_dates_the_term():
    text = "Values:\n\n``23``\n  .. versionadded:: 3.20\n\n  C++23\n\n.. option:: --junit <file>\n\n  .. versionadded:: 3.21\n\n  Write results as JUnit.\n"
    out = render(text)
    assert "`23` (new in version 3.20): C++23" in out
    assert "`--junit <file>` (new in version 3.21): Write results as JUnit." in out


def test_tabs_keep_their_titles_and_footnotes_tables_and_substitutions_their_text():
    page = """Installing
==========

.. tab:: Unix/macOS

   .. code-block:: shell

      python -m pip install SomePackage

.. tab:: Windows

   Run ``py -m pip install SomePackage`` instead [#launcher]_.

.. code-tab:: py

   import pip

.. csv-table:: Limits
   :header: "Name", "Default"

   retries, 5
   "timeout, in seconds", 15

Use |tool| to build.

.. |tool| replace:: CMake 3.20

.. [#launcher] The launcher comes with Python 3.3 and later.
"""
    text = rst_to_markdown(page)
    assert "Unix/macOS:\n\n```shell\npython -m pip install SomePackage\n```" in text
    assert "Windows: Run `py -m pip install SomePackage` instead." in text
    assert "```py\nimport pip\n```" in text
    assert "- Name: retries — Default: 5" in text and "- Name: timeout, in seconds — Default: 15" in text
    assert "Use CMake 3.20 to build." in text and "|tool|" not in text
    assert "The launcher comes with Python 3.3 and later." in text and "[#launcher]" not in text
