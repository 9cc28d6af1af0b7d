"""MyST Markdown (Sphinx's Markdown) pages as a reader of the rendered page sees them: known values per construct."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pipeline.markup import to_markdown
from pipeline.myst import myst_to_markdown

PAGE = """\
(caching)=

# Caching

```{versionadded} 6.0
```

% a comment the page never shows

pip caches HTTP responses, see {ref}`the wheel cache <wheel-caching>` and {pep}`517`,
in {file}`~/.cache/pip`; `{not a role}` stays code.

```{note}
:class: small
The cache is safe to delete.
```

````{tab} Unix
```console
$ pip cache dir
```
````

```{pip-cli}
$ pip install --no-cache-dir SomePackage
[...]
```

```{versionchanged} 23.0
The cache is keyed by URL.
```

```{toctree}
:hidden:
topics/index
```

```{code-block} toml
requires = ["setuptools>=40.8.0"]
```

```python
{ref}`kept` = 1  # inside plain fenced code nothing changes
```
"""


def test_a_page_as_its_reader_sees_it():
    text = myst_to_markdown(PAGE)
    assert text.startswith("\n# Caching") or text.startswith("# Caching")
    assert "New in version 6.0." in text
    assert "comment" not in text and "(caching)=" not in text
    assert "see the wheel cache and PEP 517,\nin `~/.cache/pip`; `{not a role}` stays code." in text
    assert "Note: The cache is safe to delete." in text and ":class:" not in text
    assert "**Unix**" in text and "```console\n$ pip cache dir\n```" in text
    assert "```console\n$ pip install --no-cache-dir SomePackage\n[...]\n```" in text  # a console session is code
    assert "Changed in version 23.0: The cache is keyed by URL." in text
    assert "topics/index" not in text and "toctree" not in text
    assert '```toml\nrequires = ["setuptools>=40.8.0"]\n```' in text
    assert "{ref}`kept` = 1" in text
    assert "{" not in text.replace("{not a role}", "").replace("{ref}`kept`", "")


def test_plain_markdown_is_left_as_it_is():
    text = "# Title\n\n% of users\n\n```python\nx = 1\n```\n\n(see above)=\n"
    assert myst_to_markdown(text) == text


def test_rendered_through_to_markdown_and_eval_rst():
    text, title = to_markdown("# Install\n\n```{eval-rst}\n.. note:: Use ``--user``.\n```\n\nDone.\n", "markdown")
    assert title == "Install"
    assert "Note: Use `--user`." in text and "eval-rst" not in text


def test_an_unclosed_directive_runs_to_the_end():
    assert "Note: Still read." in myst_to_markdown("```{note}\nStill read.\n")


@given(st.lists(st.from_regex(r"[A-Za-z0-9 ,;!?'()-]{0,60}", fullmatch=True), max_size=30))
def test_plain_prose_inside_a_note_keeps_every_word(lines: list[str]):
    body = "\n".join(line for line in lines if not line.lstrip().startswith("("))
    text = myst_to_markdown("```{note}\n" + body + "\n```\n")
    assert set(re.findall(r"\w+", body)) <= set(re.findall(r"\w+", text))


@given(st.text(alphabet=st.sampled_from(list("`{}():%=-~ \nabn0")), max_size=200))
def test_any_text_renders_without_error(text: str):
    assert isinstance(myst_to_markdown(text), str)
