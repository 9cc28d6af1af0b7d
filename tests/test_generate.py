"""Extractive answers (no LLM) with the real embedding model: the sentence that carries the value
the question asks for, list items with their head, thoughts kept whole, sentences split only where
a sentence ends, pointers elsewhere ranked below answers, and answers kept short."""

from __future__ import annotations

import re

from pipeline.generate import (
    answer_types,
    generate_extractive,
    has_value,
    number_sources,
)
from pipeline.prose import prose_units
from pipeline.types import IDK, Chunk, Hit


def _hits(*texts: str, first_position: int = 0) -> tuple[list[Hit], dict[str, int]]:
    """One document's chunks, in rank order, as retrieved hits."""
    chunks = [Chunk(id=f"c{i}", doc_id="kb:doc", text=t, context_text=t, title="Doc", path="doc.md",
                    position=first_position + i) for i, t in enumerate(texts)]
    hits = [Hit(chunk=c, score=1.0 - i / 10) for i, c in enumerate(chunks)]
    return hits, number_sources(hits)[1]


def _sentences(answer: str) -> list[str]:
    return [s.strip() for s in re.split(r"\s*\[\d+\]", answer) if s.strip()]


def test_a_how_many_question_gets_the_sentence_with_the_number(embedder):
    hits, numbers = _hits(
        "Repositories are archived automatically when they are inactive for a long time. "
        "Archived repositories stay readable by everyone. "
        "Maintainers of inactive repositories are told before the archiving happens. "
        "The current limit is 90 days.")
    answer = generate_extractive("How many days before an inactive repository is archived automatically?",
                                 hits, numbers, embedder, sentences=3)
    assert "The current limit is 90 days." in _sentences(answer)
    assert len(_sentences(answer)) <= 2  # a value question stops once the value is given


def test_a_when_question_takes_a_span_of_time_as_its_answer(embedder):
    assert has_value("Inactive repositories are archived after 90 days.", ["date"])
    hits, numbers = _hits(
        "Inactive repositories are automatically archived by the operations team with a script. "
        "A repository counts as inactive when nobody commits or comments. "
        "The current default is 90 days.")
    answer = generate_extractive("When does a repository get archived automatically?", hits, numbers, embedder)
    assert "90 days" in answer


def test_a_which_tool_question_gets_a_sentence_that_names_one(embedder):
    assert answer_types("Which password manager should I use?") == ["name"]
    assert answer_types("Which version added WebSockets?") == ["version"]  # a value type comes first
    assert answer_types("How do I reset my password?") == []
    assert has_value("We recommend KeePassXC for this.", ["name"], "Which password manager should I use?")
    assert not has_value("Use a password manager.", ["name"], "Which password manager should I use?")
    hits, numbers = _hits(
        "Use a password manager to store your passwords, and use a strong, unique password for every account. "
        "Password managers make it easy to follow the password requirements for your accounts. "
        "Never share a password with anyone.\n\nWe recommend KeePassXC, which runs on every laptop.")
    answer = generate_extractive("Which password manager should I use for my accounts?", hits, numbers, embedder)
    assert "KeePassXC" in answer


def test_a_later_sentence_of_a_list_item_brings_the_item_head(embedder):
    hits, numbers = _hits(
        "The compression level used by the middleware is now adjustable.\n\n"
        "The following arguments are supported:\n\n"
        "* `minimum_size` - Do not compress responses smaller than this. Defaults to `500`.\n"
        "* `compresslevel` - Used during compression. It is an integer from 1 to 9. Defaults to `9`.\n")
    answer = generate_extractive("What compression level does the middleware use by default?", hits, numbers, embedder)
    assert "Defaults to `9`. [1]" in answer
    assert "`compresslevel` - Used during compression. [1]" in answer  # never a bare "Defaults to 9."
    assert "The following arguments are supported: [1]" in answer  # and the list its lead-in


def test_a_sentence_that_finishes_the_thought_comes_along(embedder):
    hits, numbers = _hits(
        "By default the test client raises any exception that occurs in the application. "
        "Sometimes you want to test the content of 500 error responses instead of raising the exception. "
        "In this case you should use `TestClient(app, raise_server_exceptions=False)`.")
    answer = generate_extractive("How can I test my 500 error responses?", hits, numbers, embedder, sentences=1)
    assert "raise_server_exceptions=False" in answer


def test_a_lead_in_without_its_list_is_not_an_answer_but_one_before_code_is(embedder):
    hits, numbers = _hits("Your pay stubs are online in the payroll system.\n\nTo see your recent pay stubs:")
    answer = generate_extractive("How do I see my recent pay stubs?", hits, numbers, embedder)
    assert "To see your recent pay stubs:" not in answer and "payroll system" in answer
    hits, numbers = _hits("You can generate the schema directly with `get_schema(routes)`:\n\n"
                          "```python\nschema = schemas.get_schema(routes=app.routes)\n```\n")
    assert prose_units(hits[0].chunk.text)[0].code
    answer = generate_extractive("How do I generate the schema?", hits, numbers, embedder)
    assert "`get_schema(routes)`:" in answer


def test_sentences_are_not_split_inside_code_or_before_a_closing_aside():
    units = [u.text for u in prose_units(
        "If coverage is low you see `FAIL Required coverage of 100% not reached. Total: 99%` in the log. "
        "How long is the term renewed for? (6 months, 1 year, or 2 years). Ask first. (See the policy.)")]
    assert units == ["If coverage is low you see `FAIL Required coverage of 100% not reached. Total: 99%` in the log.",
                     "How long is the term renewed for? (6 months, 1 year, or 2 years).", "Ask first.",
                     "(See the policy.)"]


def test_of_two_copies_of_a_sentence_the_one_with_its_context_is_quoted(embedder):
    whole = ("The following arguments are supported:\n\n"
             "* `path` - The path of the cookie.\n"
             "* `samesite` - The samesite strategy of the cookie. Valid values are `lax`, `strict` and `none`.\n")
    cut = "Valid values are `lax`, `strict` and `none`.\n\n* `partitioned` - Whether the cookie is partitioned.\n"
    chunks = [Chunk(id="cut", doc_id="kb:doc", text=cut, context_text=cut, title="Doc", path="doc.md", position=3),
              Chunk(id="whole", doc_id="kb:doc", text=whole, context_text=whole, title="Doc", path="doc.md", position=2)]
    hits = [Hit(chunk=c, score=1.0 - i / 10) for i, c in enumerate(chunks)]
    answer = generate_extractive("Which values are valid for samesite?", hits, number_sources(hits)[1], embedder, sentences=1)
    assert "`samesite` - The samesite strategy of the cookie. [1] Valid values are `lax`, `strict` and `none`. [1]" in answer


def test_a_pointer_elsewhere_ranks_below_the_answer(embedder):
    hits, numbers = _hits(
        "This guide has instructions on how to create and submit a training request form. "
        "You must create the training request form in the learning system and fill in the required fields.")
    answer = generate_extractive("How do I create a training request form?", hits, numbers, embedder, sentences=1)
    assert _sentences(answer) == ["You must create the training request form in the learning system and fill in the required fields."]


def test_a_version_in_the_section_heading_leads_the_sentences(embedder):
    text = "This release fixes a denial of service via `multipart/form-data` requests.\n"
    chunk = Chunk(id="c0", doc_id="kb:notes", text=text, context_text=text, title="Release notes", path="notes.md",
                  headings=("0.40.0 (October 15, 2024)",), position=26)
    hits = [Hit(chunk=chunk, score=1.0)]
    answer = generate_extractive("Which release fixed the multipart denial of service?", hits, number_sources(hits)[1], embedder)
    assert answer == ("0.40.0 (October 15, 2024): [1]\n"
                      "This release fixes a denial of service via `multipart/form-data` requests. [1]")


def test_a_sentence_that_leans_on_one_left_out_is_not_quoted(embedder):
    hits, numbers = _hits(
        "Your first pay stub arrives two weeks after you start. Your pay period is two weeks long. "
        "This is why your pay stubs arrive every two weeks after you start work.\n\n"
        "After you leave, you keep access to your pay stubs in the payroll system for three years.")
    answer = generate_extractive("Will I still see my pay stubs after I leave?", hits, numbers, embedder, sentences=3)
    assert _sentences(answer) == ["After you leave, you keep access to your pay stubs in the payroll system for three years."]


def test_a_sentence_that_leans_on_one_left_out_takes_no_place_of_a_value(embedder):
    # "This way, …" names the service but would be shown without the sentence it points back to, so
    # it is dropped; the place it took goes to the next sentence that names one, not to nothing
    hits, numbers = _hits(
        "Every repository of the team needs continuous integration that runs its tests on each pull request.\n\n"
        "The agents keep their caches on the build machines of Buildkite.",
        "There's a secret to fast builds: cache the dependencies. "
        "This way, continuous integration on Buildkite takes minutes for every repository of the team.")
    answer = generate_extractive("Which continuous integration service should every repository of the team use?",
                                 hits, numbers, embedder)
    assert "The agents keep their caches on the build machines of Buildkite." in _sentences(answer)
    assert not any(s.startswith("This way") for s in _sentences(answer))


def test_two_items_of_a_list_bring_the_whole_list(embedder):
    hits, numbers = _hits(
        "The order in which configuration values are read is:\n\n"
        "* From an environment variable.\n"
        "* From the `.env` file.\n"
        "* The default value given in `config`.\n")
    answer = generate_extractive("Does the .env file or the default value come first?", hits, numbers, embedder)
    assert answer == ("The order in which configuration values are read is: [1]\nFrom an environment variable. [1]\n"
                      "From the `.env` file. [1]\nThe default value given in `config`. [1]")


def test_a_quoted_excerpt_that_opens_in_lower_case_is_quoted_as_a_sentence(embedder):
    hits, numbers = _hits("Per the email of 4/13/20:\n\nonly Zoom for Government may be used for Zoom meetings "
                          "initiated by GSA employees.\n\nGSA employees may join Zoom meetings hosted by partners.")
    answer = generate_extractive("Which Zoom may GSA employees use for their meetings?", hits, numbers, embedder)
    assert "Only Zoom for Government may be used for Zoom meetings initiated by GSA employees." in _sentences(answer)


def test_a_reference_entrys_default_field_leads_its_sentence(embedder):
    # a config reference gives each option a field list and one sentence: the value is the field's
    text = "* Default: 15\n* Type: Number\n\nThe maximum number of connections to use per origin.\n"
    chunk = Chunk(id="c0", doc_id="kb:config", text=text, context_text=text, title="Config", path="config.md",
                  headings=("Config Settings", "maxsockets"), position=40)
    hits = [Hit(chunk=chunk, score=1.0)]
    answer = generate_extractive("How many connections can be used per origin at most?", hits, number_sources(hits)[1], embedder)
    assert answer == ("`maxsockets` default: 15. [1]\n"
                      "The maximum number of connections to use per origin. [1]")
    # a question that asks for no value gets the sentence alone
    plain = generate_extractive("What does the connections per origin setting mean?", hits, number_sources(hits)[1], embedder)
    assert plain == "The maximum number of connections to use per origin. [1]"


def test_when_was_it_introduced_asks_for_a_version():
    assert "version" in answer_types("When was the prepare script introduced?")
    assert "version" in answer_types("Which release added HTTP/2 support?")
    assert answer_types("Who do I contact to lock down the CI on the day of a security release?") == ["name"]


def test_how_far_in_advance_and_how_long_a_line_ask_for_a_length():
    assert "duration" in answer_types("How far in advance of a release do we announce it?")
    assert answer_types("How long may the first line of a commit message be?") == ["duration"]
    assert has_value("It should be 50 characters or less.", ["duration"])


def test_a_later_chunk_that_opens_with_the_documents_lower_case_name_is_whole(embedder):
    text = "npm stores cache data in an opaque directory named `_cacache`.\n"
    whole = Chunk(id="c0", doc_id="kb:npm-cache", text=text, context_text=text, title="npm-cache",
                  path="commands/npm-cache.md", headings=("Details",), position=3)
    cut = Chunk(id="c1", doc_id="kb:other", text="and data in an opaque directory named `_other`.\n",
                context_text="", title="Other", path="other.md", headings=("Details",), position=3)
    for chunk, expected in ((whole, "Npm stores cache data in an opaque directory named `_cacache`. [1]"), (cut, IDK)):
        hits = [Hit(chunk=chunk, score=1.0)]
        assert generate_extractive("Where is the cache data stored?", hits, number_sources(hits)[1], embedder) == expected


def test_markdown_escapes_of_plain_punctuation_are_not_quoted(fake_embedder):
    from pipeline.prose import as_sentence

    text = "You will only have 8 weeks of FMLA available until March 2023\\.\n"
    hits, numbers = _hits(text)
    answer = generate_extractive("How long is FMLA available?", hits, numbers, fake_embedder)
    assert answer == "You will only have 8 weeks of FMLA available until March 2023. [1]"
    unit = prose_units("Select 0 \\- Central Office, and `C:\\. \\-x` stays code, as does a\\_b.\n")[0]
    assert as_sentence(unit) == "Select 0 - Central Office, and `C:\\. \\-x` stays code, as does a\\_b."


def test_a_list_item_that_announces_a_block_is_shown_with_it(fake_embedder):
    text = ("Every org has a `developers` team that all users are added to.\n\n* Create a new team:\n\n"
            "```bash\nnpm team create <org:team>\n```\n\n* Add members to that team:\n\n"
            "```bash\nnpm team add <org:team> <user>\n```\n")
    hits, numbers = _hits(text)
    answer = generate_extractive("Can I add members to that team?", hits, numbers, fake_embedder)
    assert answer == "Add members to that team: [1]\n\n```bash\nnpm team add <org:team> <user>\n```"


def test_of_two_copies_of_a_lead_in_the_one_with_its_block_is_quoted(fake_embedder):
    lead = "Public signing keys are provided at `registry-host.tld/-/npm/v1/keys` in the following format:\n"
    hits, numbers = _hits("Registries sign packages if:\n\n1. Signatures are provided.\n2. " + lead,  # cut before its block
                          "2. " + lead + '\n```\n{"keys": []}\n```\n\nKeys expire.\n')
    answer = generate_extractive("Where are public signing keys provided, and in what format?", hits, numbers, fake_embedder)
    assert answer.startswith(lead.strip() + " [1]\n\n```\n{\"keys\": []}\n```")


def test_a_nested_list_is_led_by_the_item_it_is_nested_in(fake_embedder):
    text = ("Steps:\n\n* [ ] 1\\. Lock down the CI:\n  * Lock down the CI to prevent public access, ping a member "
            "of `@nodejs/jenkins-admins`.\n\n* [ ] 2\\. Release the builds\n  * Verify the CI is green.\n")
    units = prose_units(text)
    assert [(u.text, u.lead) for u in units] == [
        ("Steps:", -1), ("Lock down the CI:", 0),
        ("Lock down the CI to prevent public access, ping a member of `@nodejs/jenkins-admins`.", 1),
        ("Release the builds", 0), ("Verify the CI is green.", 0)]  # an item not ending on its colon leads nothing
    hits, numbers = _hits(text)
    answer = generate_extractive("Who do I ping to lock down the CI?", hits, numbers, fake_embedder)
    # the item says more than its lead-in, whose words it repeats: both are shown
    assert "Lock down the CI: [1]\nLock down the CI to prevent public access, ping a member of" in answer


def test_a_sentence_whose_subject_points_back_after_a_condition_brings_the_one_before(fake_embedder):
    text = ("Security stewards are nominated through an issue in the TSC repository. Once approved, they are "
            "given access to all of the resources needed to carry out the release steps.\n\n"
            "Release notes are written by the releaser.\n")
    hits, numbers = _hits(text)
    answer = generate_extractive("Once approved, are they given access to the resources needed to carry out the release "
                                 "steps?", hits, numbers, fake_embedder, sentences=1)
    assert answer.startswith("Security stewards are nominated through an issue in the TSC repository. [1] Once approved, they")


def test_task_boxes_tables_of_contents_and_parentheses_are_not_quoted_as_text():
    from pipeline.prose import as_sentence

    text = ("* [ ] 2\\. **Review of Reports:**\n"
            "  * [7. Propose release on GitHub](#7-propose-release-on-github)\n"
            "* [8. Land the release](node/releases.md#8-land-the-release)\n"
            "* [thanks.dev](https://thanks.dev)\n"
            "* A direct link to one of the platforms listed below,\n\n"
            "(The `git node metadata` command can generate the metadata for you).\n")
    assert [as_sentence(u) for u in prose_units(text)] == [
        "**Review of Reports:**",  # no box, no escaped step number
        "[Thanks.dev](https://thanks.dev).",  # the table of contents' entry is gone; a list item starts a sentence
        "A direct link to one of the platforms listed below.",
        "The `git node metadata` command can generate the metadata for you.",
    ]


def test_a_default_after_its_sentence_stays_with_it():
    text = ("* `historySize` {number} Maximum number of history lines retained. It makes sense only\n"
            "    if `terminal` is set.\n    Default: `30`.\n\n#### `fetch-retries`\n\n* Default: 2\n* Type: Number\n")
    assert [u.text for u in prose_units(text)] == [
        "`historySize` {number} Maximum number of history lines retained.",
        "It makes sense only if `terminal` is set. Default: `30`.",  # the default completes the item's sentence
        "Default: 2", "Type: Number"]  # a field of its own stays one (an entry's field list)


def test_a_sentence_brings_the_next_one_that_leans_on_it(embedder):
    hits, numbers = _hits(
        "Installers record which packages a user asked for. "
        "The REQUESTED metadata may not be generated by all installers. "
        "It is generated by pip since version 20.2.\n\n"
        "Wheels are cached by default. "
        "It is recommended to clear the cache after upgrading Python.")
    answer = generate_extractive("Do all installers generate the REQUESTED metadata?", hits, numbers, embedder)
    assert "all installers. [1] It is generated by pip since version 20.2. [1]" in answer  # "It" is that metadata
    cache = generate_extractive("Are wheels cached?", hits, numbers, embedder)
    assert "Wheels are cached by default." in cache
    assert "Wheels are cached by default. [1] It is recommended" not in cache  # an "it" that stands for what follows


def test_a_condition_before_the_question_does_not_make_it_a_when_question():
    assert answer_types("When we call configure_file with NO_PERMS, what permissions does the file end up with?") == ["name"]
    assert answer_types("When I run the packer in our build directory, which file does it read?") == ["name"]
    assert answer_types("When does the cycle begin?") == ["date"]  # a question about a time still is one
    # after a condition, "which value" is read as inside a sentence: a setting, not a name
    assert answer_types("If a setting is in both the environment and the file, which value does Config use?") == []


def test_a_manual_page_section_is_no_figure():
    assert not has_value("See cargo-test(1) for the options.", ["number"])
    assert has_value("We recommend at most 8 threads; see cargo-build(1).", ["number"])


def test_a_reference_entry_comes_whole(embedder):
    hits, numbers = _hits(
        "`--config <file>`: Specify the configuration file that packer reads. "
        "By default, `PackConfig.toml` in the current directory is used.\n\n"
        "`--config-dir <dir>`: Specify the directory of the configuration file that packer reads.\n\n"
        "`--config-check`: Check the configuration file that packer reads, and exit.\n\n"
        "`--freelist-vol=<number>`: When the program frees memory, packer does not reuse it at once. "
        "It is put in a queue of freed blocks instead. "
        "This increases the chance that packer catches an access to a freed block.")
    answer = generate_extractive("How do I tell packer which configuration file to read?", hits, numbers, embedder)
    # the entry's opening brings the sentence after it: the default is part of the entry
    assert "packer reads. [1] By default, `PackConfig.toml` in the current directory is used. [1]" in answer
    freed = generate_extractive("Can packer catch accesses to freed blocks?", hits, numbers, embedder)
    # a later sentence of an entry brings the entry's opening, and the one it leans on
    assert "`--freelist-vol=<number>`: When the program frees memory" in freed
    assert "It is put in a queue of freed blocks instead. [1] This increases the chance" in freed


def test_the_entry_a_question_names_leads_the_answer(embedder):
    hits, numbers = _hits(
        "`USE_PERMS`: Transfer the permissions of the input file to the output file. "
        "This is already the default when none of `USE_PERMS`, `NO_PERMS` or `FILE_PERMS` is given. "
        "The `USE_PERMS` keyword mostly makes the intended permissions clearer.\n\n"
        "`FILE_PERMS`: Set the permissions of the output file to the ones listed.",
        "`NO_PERMS`: Do not transfer the permissions of the input file. "
        "The copied file gets the standard 644 mode.")
    answer = generate_extractive("When we copy with NO_PERMS, what permissions does the output file end up with?",
                                 hits, numbers, embedder)
    assert answer.startswith("`NO_PERMS`: Do not transfer")
    assert "The copied file gets the standard 644 mode. [1]" in answer


def test_whether_a_state_lasts_is_asked_by_when_it_changed(embedder):
    assert answer_types("Is GraphQL still built into the framework?") == ["version", "date"]
    assert answer_types("We parse the report in our tooling. Is that format stable yet?") == ["version", "date"]
    assert answer_types("If I put stdin into raw mode, can users still press Ctrl+C?") == []  # despite a condition
    assert answer_types("Will pip still reuse the wheels it built?") == []
    hits, numbers = _hits(
        "Although GraphQL support is no longer built in to the framework, you can still use GraphQL "
        "with the framework via 3rd party libraries. "
        "These libraries all have framework-specific guides to help you do just that. "
        "GraphQL support in the framework was deprecated in version 0.15.0, and removed in version 0.17.0. "
        "Built-in GraphQL support in the framework was easy to use with its own GraphQL app class.")
    answer = generate_extractive("Is GraphQL still built into the framework?", hits, numbers, embedder)
    assert "removed in version 0.17.0" in answer



def test_a_pointer_to_another_place_gives_way_to_the_answer(embedder):
    hits, numbers = _hits(
        "Schedules execution of a one-time callback after delay milliseconds. "
        "`setTimeout` is described in the [timers](timers.md) section.",
        "When the delay is larger than 2147483647 or less than 1, the delay will be set to 1.")
    answer = generate_extractive("How long can a setTimeout delay be?", hits, numbers, embedder)
    assert _sentences(answer)[0] == "When the delay is larger than 2147483647 or less than 1, the delay will be set to 1."
    assert "described in" not in answer
    hits, numbers = _hits(
        "Stops a timer that was started by `console.time()` and prints the result. "
        "See `console.timeStamp()` for an example.",
        "This method does not display anything unless used in the inspector. The `console.timeStamp()` "
        "method adds an event with the label to the Timeline panel of the inspector.")
    answer = generate_extractive("Why doesn't console.timeStamp() print anything?", hits, numbers, embedder)
    assert "for an example" not in answer and "Timeline panel" in answer
    hits, numbers = _hits("See the `timers` section for details on scheduling.")  # nothing else: the pointer is the answer
    assert generate_extractive("How do I schedule a callback?", hits, numbers, embedder).startswith("See the `timers` section")


def test_a_sentence_that_ends_on_its_colon_is_followed_by_its_own_block(embedder):
    hits, numbers = _hits(
        "To debug a program with GDB under the memory checker, start the checker like this:\n\n"
        "```\nvalgrind --vgdb=yes --vgdb-error=0 prog\n```\n\n"
        "In another window, start GDB on the same program like this:\n\n"
        "```\ngdb prog\n```\n\n"
        "Then attach GDB to the running checker with the target remote command. "
        "The program stops at the first error the checker reports.")
    answer = generate_extractive("How do I debug my program with GDB while the memory checker runs?", hits, numbers, embedder)
    # a how-to answer's closing example ("gdb prog") would read as what "like this:" introduces
    assert "start the checker like this: [1]\n\n```\nvalgrind --vgdb=yes" in answer
    hits, numbers = _hits(
        "Start the web server like this:\n\n```\nserve --port 8000\n```\n\n"
        "Start the background worker like this:\n\n```\nwork --queue jobs\n```\n\n"
        "The web server and the background worker share the same job queue.")
    answer = generate_extractive("How do I start the web server and the background worker?", hits, numbers, embedder)
    assert "Start the web server like this: [1]\n\n```\nserve --port 8000\n```" in answer
    assert "Start the background worker like this: [1]\n\n```\nwork --queue jobs\n```" in answer
