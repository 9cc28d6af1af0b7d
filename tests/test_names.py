"""Names in text (`pipeline.names`): which identifiers and proper names a claim relies on, and how they match."""

from __future__ import annotations

import pytest

from pipeline.names import halves, mentions, names, normal


@pytest.mark.parametrize(("text", "expected"), [
    ("The client accepts a url_prefix option that is prepended to every request.", ["url_prefix"]),
    ("The equivalent of requests.Session here is mylib.Client.", ["requests.Session", "mylib.Client"]),
    ("Then register it with add_url_convertor(\"datetime\", DateTimeConvertor()).", ["add_url_convertor", "DateTimeConvertor"]),
    ("Secrets are read from a .env file and the .netrc file.", [".env", ".netrc"]),
    ("Run it with the --reload flag and RAVBOT_DATA_DIR set.", ["--reload", "RAVBOT_DATA_DIR"]),
    ("The cache lives in a folder named _cacache, next to __init__.py.", ["_cacache", "__init__.py"]),
    ("Most GSA virtual meetings should be conducted in Microsoft Teams.", ["GSA", "Microsoft Teams"]),
    ("It goes to the Consolidated Processing Center (CPC) in Fort Worth.", ["Consolidated Processing Center", "CPC", "Fort Worth"]),
    ("Report it with the PhishAlarm tool.", ["PhishAlarm"]),
    # sentence-initial capitals, months, booleans and link addresses are no names
    ("Yes, it was released on October 15 and defaults to True.", []),
    ("See the guide (https://www.opm.gov/policy/leave) or mail help@example.gov for details.", []),
    ("Use version 2.31.0, e.g. with pip.", []),
    # handles, repositories and paths, labels of three or more hyphenated parts
    ("Ping @nodejs/releasers or file it in nodejs/admin.", ["@nodejs/releasers", "nodejs/admin"]),
    ("It lives in src/node_wasi.cc and adds the request-ci-failed label.", ["src/node_wasi.cc", "request-ci-failed"]),
    ("Keep it up-to-date and state-of-the-art, with read/write and/or a username/project pair.", []),
])
def test_names_known_values(text, expected):
    assert [n.text for n in names(text)] == expected


def test_normal_form_and_whole_word_mentions():
    assert normal("Use `request.client.host`. Or **Google Meet**!") == "use request.client.host or google meet"
    assert mentions("request.client.host", "The host is request.client.host.")
    assert not mentions("request.client.ip", "The host is request.client.host.")
    assert mentions("Google Meet", "Meetings use **Google Meet** by default.")
    assert not mentions("Meet", "Meetings happen weekly.")  # whole words only
    assert mentions(".env", "values come from the .env file")
    assert not mentions("", "anything")


def test_a_part_of_a_dotted_name_or_an_import_is_a_mention():
    assert mentions("iter_bytes", "Use `websocket.iter_bytes()` to read frames.")
    assert mentions("WebSocketDisconnect", "When `starlette.websockets.WebSocketDisconnect` is raised, it exits.")
    assert mentions("starlette.config.environ", "from starlette.config import Config, environ")
    assert not mentions("config.environ", "from starlette.config import environ")
    assert not mentions("iter_lines", "Use `websocket.iter_bytes()` to read frames.")


def test_a_long_proper_name_splits_into_two_names_of_two_words_or_more():
    assert halves("Commit Queue GitHub Action") == [("Commit Queue", "GitHub Action")]
    assert halves("Microsoft Teams") == [] and halves("Remove Collaborator Coverity") == []
    assert halves("Makefile and Ninja") == [("Makefile", "Ninja")]  # two names joined
    assert halves("Location URL") == [("Location", "URL")]  # a documented key and the kind of its value
    assert halves("Location Service") == []


def test_a_name_joined_by_and_is_mentioned_where_both_sides_are():
    text = "This option is implemented only by Makefile Generators and Ninja Generators."
    assert mentions("Makefile and Ninja", text)
    assert not mentions("Makefile and Xcode", text)


@pytest.mark.parametrize(("flag", "text", "found"), [
    ("--interpreter", "you can use the `--python` option to specify the interpreter you want to manage", False),
    ("--python", "you can use the `--python` option", True),
    ("--global", "#### `global`\n* Default: false", True),  # a reference page's heading names the option
    ("-e", "pip install -e path/to/SomeProject", True),
    ("--json", "Print the JSON output", False),
    ("--maxsockets", "Config Settings > maxsockets\n\n* Default: 15", True),  # a heading of its own
])
def test_a_one_word_flag_needs_its_dashes_or_code_quotes(flag, text, found):
    assert mentions(flag, text) is found
