"""How-to answers end with the documents' own code example (pipeline.examples), and code is
never a claim, a fragment or an open block in a posted message."""

from __future__ import annotations

from adapters.discord import MESSAGE_LIMIT
from adapters.discord import render_answer as discord_render
from adapters.render import balance_fences, split_text
from adapters.slack import SECTION_LIMIT, bare_fences
from adapters.slack import render_answer as slack_render
from lab.check import extractive_flags
from pipeline.chunking import chunk_document
from pipeline.claims import extract_claims
from pipeline.examples import MAX_EXAMPLE_LINES, asks_how, best_example, code_blocks, code_terms
from pipeline.generate import generate_extractive, number_sources
from pipeline.prose import prose_units
from pipeline.types import Answer, Chunk, Document, Hit

TEMPLATES = """# Templates

Starlette works with any template engine, and includes a Jinja2 configuration.

```python
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.templating import Jinja2Templates

templates = Jinja2Templates(directory='templates')

async def homepage(request):
    return templates.TemplateResponse(request, 'index.html')
```

## Testing template responses

When using the test client, template responses include the template name and its context.

```python
from starlette.applications import Starlette
from starlette.testclient import TestClient

def test_homepage():
    client = TestClient(app)
    response = client.get("/")
    assert response.template.name == 'index.html'
```
"""


def _hit(text: str, rank: int = 0) -> Hit:
    chunk = Chunk(id=f"c{rank}", doc_id="kb:doc", text=text, context_text=text, title="Doc", path="doc.md", position=rank)
    return Hit(chunk=chunk, score=1.0 - rank / 10)


def test_how_to_questions():
    assert asks_how("How do I render a template?") and asks_how("how can we rotate keys")
    assert asks_how("How to set a cookie?") and asks_how("How should I hash passwords?")
    assert not asks_how("How many files are accepted?") and not asks_how("What does render do?")
    assert not asks_how("How long do sessions last?")
    assert asks_how("Our topic must trigger a function. How do I grant that?")  # after the context it opens with
    assert asks_how("After a release, how do we point the alias at it?")
    assert not asks_how("We know how to deploy. Is it fast?") and not asks_how("Is this how we do it?")


def test_code_blocks_are_whole_fenced_examples():
    text = ('Intro.\n\n```python hl_lines="2"\nx = 1\ny = 2\n```\n\n  ~~~\n  $ pip install thing\n  ~~~\n\n'
            '```\n    return value  # the middle of a longer block\n```\n\n```py\n' + "line\n" * (MAX_EXAMPLE_LINES + 1) + "```\n")
    assert code_blocks(text) == ["```python\nx = 1\ny = 2\n```", "~~~\n$ pip install thing\n~~~"]
    assert code_blocks("``` \nunclosed = True\n") == []
    assert code_terms("register_url_convertor(FloatConvertor)") == {"regist", "url", "convertor", "float"}


def test_best_example_is_the_block_holding_the_question_words_the_others_lack():
    hits = [_hit(TEMPLATES)]
    assert "TemplateResponse" in best_example("How do I render a page with Jinja2Templates?", hits)
    assert "TestClient" in best_example("How do I test a template with the test client?", hits)
    # "starlette" and "applications" are in every block: on their own they choose nothing
    assert best_example("How do I start a Starlette application?", hits) == ""
    assert best_example("How do I render a template?", [_hit("No code here.")]) == ""


def test_a_how_to_answer_ends_with_the_example_and_other_answers_have_none(embedder):
    doc = Document(id="kb:templates", source="kb", title="Templates", text=TEMPLATES, path="templates.md")
    hits = [Hit(chunk=c, score=1.0 - i / 10) for i, c in enumerate(chunk_document(doc, size=800, overlap=0))]
    numbers = number_sources(hits)[1]
    how = generate_extractive("How do I render a Jinja2 template response?", hits, numbers, embedder)
    prose, _, code = how.partition("\n\n```")
    assert "[1]" in prose and code.startswith("python\n") and "templates.TemplateResponse(request, 'index.html')" in code
    assert how.endswith("```") and how.count("```") == 2
    what = generate_extractive("Which template engine does Starlette include?", hits, numbers, embedder)
    assert "```" not in what and "Jinja2" in what


def test_code_is_not_a_claim_and_not_prose_to_the_checks():
    text = ("Render it with the templates object. [1]\n\n```python\nreturn templates.TemplateResponse(request, 'index.html')\n"
            "{{ url_for('static', path='/css/style.css') }}\n```\n\nIt works in async endpoints too. [1]")
    assert [c.text for c in extract_claims(text, ())] == ["Render it with the templates object.",
                                                          "It works in async endpoints too."]
    flags = extractive_flags(text)
    assert not flags["fragment"] and not flags["template"]
    assert extractive_flags("Use {{ site.url }} here. [1]")["template"]
    assert extractive_flags("Render it with the templates object. [1] return TemplateResponse(request)")["fragment"]


def test_posted_code_blocks_are_never_left_open():
    code = "```python\n" + "\n".join(f"value_{i} = compute({i}, 'argument')" for i in range(150)) + "\n```"
    text = "Call compute for each value [1].\n\n" + code + "\n\nThat is all [1]."
    assert bare_fences("```python\nx\n~~~\n") == "```\nx\n```\n"
    sections = [b["text"]["text"] for b in slack_render(Answer(question="q", text=text))[0] if b["type"] == "section"]
    posts = [p.content for p in discord_render(Answer(question="q", text=text))]
    for pieces, limit in ((sections, SECTION_LIMIT), (posts, MESSAGE_LIMIT)):
        assert len(pieces) >= 2 and all(len(p) <= limit for p in pieces)
        assert all(p.count("```") % 2 == 0 for p in pieces)  # each message closes what it opens
    assert "```python" not in "".join(sections) and "```python" in posts[0]
    assert [line for p in split_text(text, 1000) for line in p.split("\n") if line.startswith("value_")] == \
        [line for line in code.split("\n") if line.startswith("value_")]  # nothing lost or doubled
    assert balance_fences(["no code", "at all"]) == ["no code", "at all"]


# The shape of a command reference page (the AWS CLI's examples): a title, a sentence that
# introduces a command, the command, and its output.
PRESIGN = """**Example 1: To create a pre-signed URL with the default lifetime**

The following `presign` command generates a pre-signed URL that is valid for one hour.

```
aws s3 presign s3://bucket/report.txt
```

Output:

```
https://bucket.s3.amazonaws.com/report.txt?X-Amz-Expires=3600
```

**Example 2: To create a pre-signed URL with a custom lifetime**

The following `presign` command generates a pre-signed URL that is valid for one week.

```
aws s3 presign s3://bucket/report.txt \\
    --expires-in 604800
```

Output:

```
https://bucket.s3.amazonaws.com/report.txt?X-Amz-Expires=604800
```
"""


def test_a_sentence_keeps_the_short_code_block_it_introduces():
    units = prose_units(PRESIGN)
    leads = [u for u in units if u.example]
    assert [u.text for u in leads] == [
        "The following `presign` command generates a pre-signed URL that is valid for one hour.", "Output:",
        "The following `presign` command generates a pre-signed URL that is valid for one week.", "Output:"]
    assert leads[2].example == "```\naws s3 presign s3://bucket/report.txt \\\n    --expires-in 604800\n```"
    assert not units[0].example  # a title introduces the sentence, not the block
    long_block = "Run this:\n\n```\n" + "x = 1\n" * (MAX_EXAMPLE_LINES + 1) + "```\n"
    assert prose_units(long_block)[0].code and not prose_units(long_block)[0].example  # a program, not an example
    assert not [u for u in prose_units("# Setup\n\n```\npip install x\n```\n") if u.example]  # a heading leads nothing


def test_a_value_question_shows_the_example_its_sentence_introduces_with_its_output(embedder):
    hits = [_hit(PRESIGN)]
    answer = generate_extractive("Which flag keeps a presigned URL working for a whole week?", hits,
                                 number_sources(hits)[1], embedder)
    week = answer.index("valid for one week.")
    assert answer.index("--expires-in 604800", week) < answer.index("Output:", week) < answer.index("X-Amz-Expires=604800", week)
    assert "X-Amz-Expires=3600" not in answer  # the other example is not shown
    assert not extractive_flags(answer)["fragment"]
    plain = generate_extractive("What does a pre-signed URL link to?", hits, number_sources(hits)[1], embedder)
    assert "```" not in plain  # a question that asks for no value and how to do nothing gets no code


def test_a_how_to_example_comes_with_its_output(embedder):
    hits = [_hit(PRESIGN)]
    answer = generate_extractive("How do I presign an object with --expires-in?", hits, number_sources(hits)[1], embedder)
    code = answer[answer.index("```"):]
    assert code.startswith("```\naws s3 presign s3://bucket/report.txt \\\n    --expires-in 604800\n```")
    assert code.endswith("Output:\n```\nhttps://bucket.s3.amazonaws.com/report.txt?X-Amz-Expires=604800\n```")


# A command page with two examples that share every word of the question: no block stands out by
# its words (`best_example` gives ""), so the example shown is the one the quoted sentence introduces.
PIN_RELEASE = """To pin a channel to a release

The following `pin-channel` example points the channel named `STABLE` at release 7 of the `web-app` project.

```
shipit pin-channel \\
    --project web-app \\
    --release 7 \\
    --channel STABLE
```
"""
NEW_CHANNEL = """To create a channel for a project

The following `create-channel` example creates a channel named `STABLE` that points at release 1 of the `web-app` project.

```
shipit create-channel \\
    --project web-app \\
    --release 1 \\
    --channel STABLE
```
"""


def test_a_how_to_answer_shows_the_example_its_sentence_introduces(embedder):
    hits = [_hit(PIN_RELEASE + "\n" + NEW_CHANNEL)]
    question = "After a deploy, how do we point the STABLE channel of web-app at the new release?"
    assert best_example(question, hits) == ""  # every block holds the question's words
    answer = generate_extractive(question, hits, number_sources(hits)[1], embedder)
    quoted = [name for name in ("pin-channel", "create-channel") if f"`{name}` example" in answer]
    assert quoted and answer.index(f"shipit {quoted[0]}") > answer.index(f"`{quoted[0]}` example")
    assert answer.count("```") == 2  # the example of the first quoted sentence only, once
    assert not extractive_flags(answer)["fragment"]
    plain = generate_extractive("What does the STABLE channel of web-app point at?", hits, number_sources(hits)[1], embedder)
    assert "```" not in plain  # no how-to, no value: no code


def test_a_sentence_that_ends_on_its_colon_brings_its_example(embedder):
    # "… start the checker like this:" is not whole without the command it introduces, whatever the
    # question asks; a sentence that ends on a full stop brings no code to such a question
    doc = ("# Debugging under the checker\n\n"
           "If you want to debug a program with GDB while the checker runs it, start the checker like this:\n\n"
           "```\nmemcheck --attach-gdb=yes ./server --port 8080\n```\n\n"
           "The checker then stops at the first error and waits for GDB to connect.\n")
    hits = [_hit(doc)]
    answer = generate_extractive("Can we debug our server with GDB while the checker runs it?", hits,
                                 number_sources(hits)[1], embedder)
    assert answer.index("like this: [1]") < answer.index("```\nmemcheck --attach-gdb=yes ./server --port 8080\n```")
    assert not extractive_flags(answer)["fragment"]
    plain = generate_extractive("Does the checker stop at the first error?", hits, number_sources(hits)[1], embedder)
    assert "waits for GDB to connect" in plain and "```" not in plain
