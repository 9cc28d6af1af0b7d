"""The signals behind the meaning checks, pinned on plain sentences: numbers and versions, names,
sentence splitting of Markdown evidence, negation (conditions, "unless", "instead of") and flips."""

from __future__ import annotations

import threading

import pytest

from pipeline import numbers
from pipeline.names import names, spelled_alike
from pipeline.text import markdown_sentences
from pipeline.verify import align, code, details, flips, meaning, polarity, rivals, roles, sides
from pipeline.verify import lemmas as lemmas_mod
from pipeline.verify.candidates import (
    evidence_candidates,
    field_entry,
    whole_block,
    whole_item,
    whole_list,
)
from pipeline.verify.opposites import opposed


def values(text: str) -> list[tuple[str, str, str]]:
    return [(v.text, v.kind, v.unit) for v in numbers.extract_values(text)]


def test_a_version_is_one_value_and_two_versions_conflict():
    assert values("Starlette 0.40.0 was released") == [("0.40.0", "version", "")]
    old, new = numbers.extract_values("0.40.0 and v0.40.1")
    assert new.text == "v0.40.1" and numbers.comparable(old, new) and not numbers.same_value(old, new)
    assert values("a 3.5 hour meeting") == [("3.5", "number", "hour")]  # two parts stay a number


def test_a_currency_sign_is_the_unit_so_amounts_compare():
    (fifty,), (seventy_five,) = numbers.extract_values("over $50"), numbers.extract_values("over $75.")
    assert (fifty.text, fifty.unit) == ("$50", "dollar")
    assert numbers.comparable(fifty, seventy_five)


def test_general_acronyms_are_words_not_names():
    assert [n.text for n in names("The CI job fails if the JSON API returns HTTP 500.")] == []
    assert [n.text for n in names("Ask the TTS team about OPM forms.")] == ["TTS", "OPM"]


def test_evidence_sentences_rejoin_wrapped_lines_but_keep_blocks_apart():
    text = ("## 0.40.0 (October 15, 2024)\nThis release fixes a denial\nof service. Users may\nretry.\n\n"
            "* Item one\n  continues here.\n* Item two\n```python\na = 1\nb = 2\n```\nAfter the\ncode.")
    assert markdown_sentences(text) == [
        "## 0.40.0 (October 15, 2024)", "This release fixes a denial of service.", "Users may retry.",
        "* Item one continues here.", "* Item two", "```python", "a = 1", "b = 2", "```", "After the code.",
    ]


def test_a_short_title_line_is_not_joined_to_the_paragraph_below_it():
    assert markdown_sentences("Meals and Incidental Expenses (M&IE)\nIn addition to tickets, you get\na per diem.") == [
        "Meals and Incidental Expenses (M&IE)", "In addition to tickets, you get a per diem."]


@pytest.mark.parametrize(("claim", "sentence", "differs"), [
    ("Don't click any links in the email, and don't delete it yet.", "Do not click any links in the email.", False),
    ("Most meetings should be held in Google Meet.",
     "Zoom is for those whose need cannot be met with Google Meet; most meetings should be held in Google Meet.", False),
    ("Expenses are covered by a per diem, without providing receipts.", "Meals and Incidental Expenses (M&IE)", False),
    ("Personal laptops can be connected to the GSA network.", "Personal laptops cannot be connected to the GSA network.", True),
    ("StaticFiles doesn't follow links unless you set it.", "StaticFiles follows links when you set it.", False),
    ("You can install it from the Self-Service app.",
     "Step 3 - If it is not located in the Self Service application, submit a service desk request.", False),
    # a condition that opens the claim ends at its comma, however the parser attached "npm init"
    ("When you run npm init without an initializer, it falls back to the legacy questionnaire.",
     "If the initializer is omitted (by just calling `npm init`), init will fall back to legacy init behavior.", False),
    # "not to remove" says "keeps"; "in lieu of reading" says "does not read"
    ("--no-save keeps the package in your package.json.",
     "`--no-save` will tell npm not to remove the package from your `package.json`.", False),
    ("--no-save removes the package from your package.json.",
     "`--no-save` will tell npm not to remove the package from your `package.json`.", True),
    ("npm keeps a hidden lockfile so it does not have to read the entire node_modules hierarchy.",
     "The hidden lockfile is used in lieu of reading the entire `node_modules` hierarchy.", False),
    # a negation word inside a code name, or quoted as a value, negates nothing
    ("cluster.schedulingPolicy is cluster.SCHED_RR or cluster.SCHED_NONE.",
     "The scheduling policy, either `cluster.SCHED_RR` or `cluster.SCHED_NONE`.", False),
    ("Set it through NODE_CLUSTER_SCHED_POLICY, with the values 'rr' or 'none'.",
     "It can be set through `NODE_CLUSTER_SCHED_POLICY`. Valid values are `'rr'` and `'none'`.", False),
    # "the lack of X" negates X, not what is said of it
    ("Even with npm in the packageManager property, the global npm is used.",
     "While `npm` is a valid option in the `packageManager` property, the lack of shim will cause the global npm to be used.", False),
    # an "unless" may add an exception to a sentence without a condition, and is "if not" against one with
    ("Subpaths are no longer available to importers unless you export them.",
     "All subpaths of the package are no longer available to importers.", False),
    ("Subpaths are available to importers unless you define exports.",
     "Subpaths are available to importers when you define exports.", True),
    # a negation in the evidence's own condition states what the claim's "without" does
    ("If a callback is given, the error is passed to it; without a callback it is emitted as an 'error' event.",
     "If a `callback` is given, the error will be passed to the `callback`. If a `callback` is not given, the error is emitted as an `'error'` event.",
     False),
])
def test_negation_is_compared_where_it_is_asserted(claim, sentence, differs):
    assert align._negation_differs(claim, sentence) is differs


@pytest.mark.parametrize(("text", "kept"), [
    ("A RuntimeError is raised if it isn't supported.", "A RuntimeError is raised ."),
    ("Award leave is not paid out when you leave TTS.", "Award leave is not paid out ."),
    # the words kept are spaced as written: a flag stays one word ("--no-git-tag-version", not "no")
    ("If you want the version bump without the commit and tag, run npm --no-git-tag-version version.",
     "run npm --no-git-tag-version version."),
    ("StaticFiles doesn't follow links unless you set it.", "StaticFiles doesn't follow links unless you set it."),
    ("Step 3 - If it is not there, submit a request.", "submit a request."),
    ("- Leave is not paid out.", "Leave is not paid out."),
])
def test_asserted_sets_conditions_aside_but_keeps_unless(text, kept):
    assert meaning.asserted(text) == kept


@pytest.mark.parametrize(("claim", "evidence", "flip"), [
    # "unless" is "if not": the same statement as "when"
    ("StaticFiles doesn't follow symbolic links unless you set follow_symlink.",
     "StaticFiles follows symbolic links when you set follow_symlink.", ""),
    ("StaticFiles follows symbolic links unless you set follow_symlink.",
     "StaticFiles follows symbolic links when you set follow_symlink.", "StaticFiles follows symbolic links when"),
    # "instead of X" negates X, and a clause the predicate governs is not its argument
    ("It buffers the body and then compresses it, instead of compressing every small chunk.",
     "We don't want to compress every small chunk of data.", ""),
    # before/after: the clause they modify counts as their argument
    ("List the more specific route after the general one.",
     "Make sure that more specific routes are listed before general cases.", "before general cases"),
    ("List the more specific route before the general one.",
     "Make sure that more specific routes are listed before general cases.", ""),
    # code names compare as written (the lemmatiser would strip "allow_headers" to "allow_header")
    ("The allow_methods and allow_headers options can be set to a wildcard.",
     "The allow_methods and allow_headers options cannot be set to a wildcard.", "allow_methods"),
    # a participle describing a noun is not negated by the negation above it
    ("Not every workspace has to implement a script that you run with npm run.",
     "It is not required for all of the workspaces to implement scripts run with the `npm run` command.", ""),
    # a predicate in the claim's condition is compared with conditions only
    ("If you do want the file: reference written to package.json, use npm link --save.",
     "This will also prevent writing `package.json` if `save` is false.", ""),
    ("Don't write the file: reference to package.json.",
     "This will also prevent writing `package.json` if `save` is false.", ""),
    # "no activity keeping the loop running" is "nothing keeps it running"
    ("The process may exit if nothing else keeps the event loop running.",
     "If there is no other activity keeping the event loop running, the process may exit.", ""),
    ("The process may exit if something keeps the event loop running.",
     "If there is no other activity keeping the event loop running, the process may exit.", "keeping the event loop running"),
    # "before"/"after" introducing a clause: a flip where they order the same events, not where the
    # clauses trade places ("back up before you upgrade" says "upgrade after backing up")
    ("The 'newListener' event is emitted only after the listener has been added to the array.",
     "The instance will emit its own 'newListener' event before a listener is added to its array.",
     "before a listener is added to its array"),
    ("Back up the data before you upgrade the server.", "Upgrade the server after backing up the data.", ""),
    # a verb used as a preposition ("including") is no predicate to oppose "excluded"
    ("Ignored files are excluded from the package, including those in child directories.",
     "Ignored files in all child directories will be excluded from the package.", ""),
])
def test_flipped_reads_negation_and_opposites_in_context(claim, evidence, flip):
    found = flips.flipped(claim, [evidence])
    assert (found == "") == (flip == "") and flip in found, found


@pytest.mark.parametrize(("claim", "evidence", "flip"), [
    # a lexicon pair: keeping what was advanced is the opposite of giving it back
    ("If the trip costs less than the advance, you must return the rest.",
     "If the trip costs less than the advance, you can keep the rest.", "you can keep the rest"),
    # a negating prefix on an adjective
    ("Tokens in the query string are valid for signing in.",
     "Tokens in the query string are invalid for signing in.", "invalid"),
    ("Tokens in the query string are valid for signing in.",
     "Tokens in the query string are valid for signing in.", ""),
    # raising an error is how a call fails
    ("A second read of the body works.", "A second read of the body raises a RuntimeError.", "raises a RuntimeError"),
    ("A second read of the body raises an exception.", "A second read of the body raises a RuntimeError.", ""),
    # ignoring a flag is the opposite of honouring it; a negation with an exception is a restriction
    ("In global mode the --no-save flag is still honored.", "In global mode the --no-save flag is ignored.", "ignored"),
    ("Clearing the cache is only needed to reclaim disk space.",
     "It should never be necessary to clear the cache for any reason other than reclaiming disk space.", ""),
    # a keyword of code is no predicate: "return" here is Python's, not "give back"
    ("The option keeps the route out of the schema.", "return schemas.Response(route=route) schema = [", ""),
])
def test_flipped_reads_opposites_from_the_lexicon_prefixes_and_errors(claim, evidence, flip):
    found = flips.flipped(claim, [evidence])
    assert (found == "") == (flip == "") and flip in found, found


@pytest.mark.parametrize(("claim", "swap"), [
    ("When both files exist, npm ignores the .npmignore and uses only the .gitignore.", "the `.gitignore` is ignored"),
    ("When both files exist, npm ignores the .gitignore and uses only the .npmignore.", ""),
    ("npm ignores the .gitignore.", ""),  # one name: nothing to swap
])
def test_a_predicate_on_the_other_of_two_names_is_a_swap(claim, swap):
    evidence = "If both files exist, then the `.gitignore` is ignored, and only the `.npmignore` is used."
    assert roles.swapped(claim, [evidence]) == swap


def test_a_predicate_said_of_the_claims_name_somewhere_is_no_swap():
    evidence = ("If you call `websocket.close()` before calling `websocket.accept()` then the server will "
                "automatically send a HTTP 403 error to the client.")
    claim = "Calling websocket.close() before websocket.accept() makes the server send an HTTP 403 error."
    assert roles.swapped(claim, [evidence]) == ""


def test_a_name_attached_to_the_object_is_not_what_the_predicate_acts_on():
    claim = "Hotels booked through AdTrav are charged to a personal card, while flights are charged to GSA."
    evidence = ("If you book through AdTrav, hotels will be charged against a personal card, but flights or rail "
                "will be charged directly to the GSA.")
    assert roles.swapped(claim, [evidence]) == ""


@pytest.mark.parametrize(("a", "b", "pos", "opposite"), [
    ("safe", "unsafe", "ADJ", True), ("valid", "invalid", "ADJ", True), ("blocking", "non-blocking", "ADJ", True),
    ("lock", "unlock", "VERB", True), ("form", "inform", "VERB", False), ("do", "undo", "VERB", False),
    ("keep", "return", "VERB", True), ("keep", "store", "VERB", False),
])
def test_opposed_lemmas(a, b, pos, opposite):
    assert opposed(a, b, pos) is opposite


def test_a_clause_joined_to_a_claim_that_no_one_sentence_states_is_an_added_detail(embedder):
    page = ("When a target links to one of the libraries, the tool repeats the whole group on the link line. "
            "A warning names a missing file. Build files are written once.\n\n"
            "A cycle between static libraries is allowed. Static libraries are archives. "
            "Generate time is when the build files are written.")  # every word, but in sentences apart
    claim = "When a target links to one of them, the tool repeats the whole group, and it prints a warning about the cycle at generate time."
    assert details.unstated_clause(claim, [page]) == "it prints a warning about the cycle at generate time"
    assert details.unstated_clause("When a target links to one of them, the tool repeats the whole group, "
                                   "and a cycle between static libraries is allowed.", [page]) == ""  # one sentence says it
    assert details.unstated_clause("When a target links to one, the tool repeats the group, which is allowed.", [page]) == ""  # too short
    added = align.analyse([claim], [[page]], embedder, cited=[True])[0]
    assert added.extra == "it prints a warning about the cycle at generate time" and added.extra_clause
    # a clause the evidence says in other words is no addition
    assert details.reworded(["it serves 404.html, if present, as the 404 response", "it prints a warning about the cycle"],
                            [["If a `404.html` file exists it will be shown as 404 response."]] * 2, embedder) == [True, False]


def test_only_a_cited_claim_is_held_to_its_sources_wording(embedder):
    claim = "Paid leave requests go to your supervisor, who approves them within two business days."
    evidence = [["Paid leave requests go to your supervisor for approval."]]
    cited, uncited = (align.analyse([claim], evidence, embedder, cited=[c])[0] for c in (True, False))
    assert cited.extra and not uncited.extra


@pytest.mark.parametrize(("text", "scopes"), [
    ("Sick leave isn't paid out, but you won't lose it.", [("Sick leave is paid out but", {"pay", "out"}), ("you wo lose it", {"lose"})]),
    ("There's no salary maximum for earning them.", [("There 's salary maximum for earning them", {"maximum"})]),
    ("Don't share sensitive data in Slack, since Drive is the only approved way.", [("Do share sensitive data in Slack", {"share", "datum"})]),
    ("An error is raised if it isn't supported.", []),  # a condition asserts nothing
])
def test_negation_scopes_are_the_negated_clause_and_its_predicate(text, scopes):
    assert [(words, set(core)) for words, core in meaning.negation_scopes(text)] == scopes


def test_a_negation_backed_by_another_evidence_sentence_is_no_flip():
    claim = "Sick leave isn't paid out, but if you leave and later rejoin, it's reinstated."
    window = "If you leave the federal government and later decide to rejoin, your Sick Leave will be reinstated."
    passage = "Your Sick Leave will not be paid out. " + window
    assert align._negation_differs(claim, window, [passage]) is False
    assert align._negation_differs(claim, window, ["Your Sick Leave will be paid out. " + window]) is True
    # a negated detail the evidence never states is an added detail, not a flip
    assert align._negation_differs("You don't need receipts for meals, which a per diem covers.",
                                   "You get a flat-rate per diem for meals.") is False
    # … and so is one whose predicate only a sentence about something else states: that sentence must
    # hold most of the negated clause's words ("file" alone does not state "won't produce the file")
    claim = "It is only implemented by the Makefile generators, so Visual Studio won't produce the file."
    aligned = "This option is implemented only by Makefile Generators."
    elsewhere = "If enabled, it generates a JSON file listing the compiler calls. Visual Studio will produce the file too."
    assert align._negation_differs(claim, aligned, [aligned, "If enabled, generates a `compile_commands.json` file."]) is False
    assert align._negation_differs(claim, aligned, [aligned, elsewhere]) is True


def test_quoted_values_and_concessions_are_no_negation():
    assert align.negated("Valid values are 'lax', 'strict' and 'none'.") is False
    assert align.negated("Set `none` to turn it off.") is False
    # an example in parentheses is values too, and ", and not to the …" sets an alternative aside
    assert align.negated("These options all default to the current system, and not to the most restrictive "
                         "constraints (e.g. platform any, abi none, etc).") is False
    assert align.negated("These options default to the most restrictive constraints (platform any, abi none).") is True
    assert align.negated("It runs on Linux, and not on Windows.") is True  # no determiner: a statement about Windows
    assert align._negation_differs("You can still use GraphQL with Starlette via third-party libraries.",
                                   "Although GraphQL support is no longer built in, you can still use GraphQL "
                                   "with Starlette via 3rd party libraries.") is False


@pytest.mark.parametrize(("claim", "evidence"), [
    ("GSA SecOps can award the bounty without waiting until the issue is resolved.",
     "There is no need to wait until the issue is resolved to award."),
    ("Edits are fine, but don't abuse editing to delete a message by replacing it with null content.",
     "Do not abuse the `edit` command in Slack to delete your message by replacing it with null content."),
])
def test_the_same_negation_parsed_differently_is_no_flip(claim, evidence):
    assert flips.flipped(claim, [evidence]) == ""


def test_a_flipped_need_is_still_a_flip():
    assert flips.flipped("You need to wait until the issue is resolved.",
                           ["There is no need to wait until the issue is resolved to award."]) != ""


@pytest.mark.parametrize(("claim", "unstated"), [
    ("To apply, submit the request form.", ""),  # the answer's own verbs for the documents' actions
    ("Pass a redirect argument to the decorator.", ""),
    ("The release is published after two maintainers approve it.", "two maintainers approve"),
    ("You can request one box a year of business cards.", "one box a year"),
    ("Backups are kept for 30 days, then moved to tape.", "moved to tape"),  # an action joined to the statement
    ("The docs recommend sending the request form to your supervisor.", ""),  # attributing it to the documents adds nothing
    ("In general, by contrast, you send the request form to your supervisor.", ""),  # discourse phrases
    ("The decorator lets you pick a redirect parameter.", ""),  # a permission's frame
    ("Backups are kept for 30 days in cold storage.", "cold storage"),
])
def test_unstated_details_are_things_and_quantities_not_reworded_actions(claim, unstated):
    passages = ["Send the request form to your supervisor. The decorator takes a redirect parameter. "
                "The release is published by the release job. You can request business cards. "
                "Backups are kept for 30 days."]
    assert details.unstated_details(claim, passages) == unstated


def test_a_kind_of_thing_is_not_the_general_thing():
    evidence = ["If you leave GSA, any unused travel comp time will be forfeited.",
                "If you leave GSA, your comp time will be paid out."]
    # "paid out" and "forfeited" are opposites; what is said of "comp time" is not said of "travel comp time"
    assert flips.flipped("Any unused travel comp time is also paid out when you leave GSA.", evidence) != ""
    assert flips.flipped("If you leave GSA, your comp time is paid out.", evidence) == ""
    assert flips.flipped("Any unused travel comp time is forfeited when you leave GSA.", evidence) == ""


def test_a_clause_with_its_own_negation_keeps_it():
    # spaCy reads "paid" as a clause of "lose"; two negations there are not a double negative
    assert flips.flipped("Sick leave isn't paid out, but you won't lose it.",
                           ["- Your Sick Leave will not be paid out; however, you will not lose it."]) == ""


@pytest.mark.parametrize(("claim", "sentence", "rival"), [
    ("StaticFiles follows links, since the follow_symlink option defaults to True.",
     "Signature: `StaticFiles(directory=None, check_dir=True, follow_symlink=False)`", "follow_symlink=False"),
    ("The follow_symlink option defaults to True.",
     "* `follow_symlink` - Whether links are followed. Defaults to `False`.", "follow_symlink=False"),
    ("samesite defaults to 'strict'.", "Signature: `set_cookie(key, path='/', samesite='lax')`", "samesite='lax'"),
    ("check_dir defaults to True, so the directory must exist.",
     "Signature: `StaticFiles(directory=None, check_dir=True, follow_symlink=False)`", ""),
    ("It defaults to False.", "Signature: `StaticFiles(directory=None, check_dir=True)`", ""),  # no option named
    # a reference page's section: the option's heading, then "Default: …"
    ("The license comes from the init-license config, whose default is MIT.",
     'Config Settings > init-license * Default: "ISC" * Type: String', "init-license=ISC"),
    ("Retries are set by fetch-retries, which defaults to 2.", "Config Settings > fetch-retries * Default: 2", ""),
    # "it" is the option the claim names before; its own item of a list of options gives the default
    ("The historySize option sets how many lines are kept, and it defaults to 50.",
     "* `history` {string[]} Initial list of history lines.\n    Default: `[]`.\n\n* `historySize` {number} Maximum "
     "number of history lines retained.\n    Default: `30`.\n\n* `prompt` {string} Default: `'> '`.", "historySize=30"),
    ("The historySize option sets how many lines are kept, and it defaults to 50.",
     "* `historySize` {number} Maximum number of history lines retained.\n\n* `prompt` {string} Default: `'> '`.",
     ""),  # its item gives no default: another item's is not its
    ("The NODE_REPL_HISTORY_SIZE variable controls how many lines are kept and defaults to 500.",
     "* `NODE_REPL_HISTORY`: The path to the history file. Default: `'.node_repl_history'`.\n* `NODE_REPL_HISTORY_SIZE`:"
     " Controls how many lines of history will be persisted. Must be a positive number. Default: `1000`.",
     "NODE_REPL_HISTORY_SIZE=1000"),  # "… and defaults to": the one option the claim names
    ("The historySize option sets how many lines are kept, and it defaults to 50.",
     "Default: `[]`. * `historySize` {number} Maximum number of history lines retained.", ""),  # the item before's
    ("The `history` and `historySize` options are kept together, and it defaults to 50.",
     "* `historySize` {number} Maximum number of history lines retained.\n    Default: `30`.", ""),  # which is "it"?
    # a leading-underscore name in the same place as the source's
    ("npm keeps its cache in a directory named _logs inside the cache folder.",
     "npm stores cache data in an opaque directory within the configured cache, named _cacache.", "_cacache"),
])
def test_an_options_default_is_compared_with_the_sources(claim, sentence, rival):
    assert rivals.name_in_place(claim, sentence, sentence)[1] == rival


def test_a_sentence_may_start_with_a_code_name():
    from pipeline.claims import extract_claims

    text = "The follow_symlink option defaults to False. check_dir defaults to True [1]."
    assert [c.text for c in extract_claims(text, [])] == [
        "The follow_symlink option defaults to False.", "check_dir defaults to True."]


def test_an_invented_class_name_is_answered_by_its_sections_name():
    passage = "Middleware > TrustedHostMiddleware\n\nEnforces that all incoming requests have a correctly set Host header."
    claim = "Use AllowedHostsMiddleware, which makes sure every request has a correctly set Host header."
    assert rivals.heading_rival("AllowedHostsMiddleware", passage, claim) == "TrustedHostMiddleware"
    assert rivals.heading_rival("RateLimiter", passage, claim) == ""  # no part in common: not the same make
    assert rivals.heading_rival("AllowedHostsMiddleware", passage.split("\n\n")[1], claim) == ""  # no heading


def test_a_spelled_out_length_of_time_is_a_value_to_check_but_counting_words_are_not():
    values = numbers.extract_values("It is posted for two weeks, in three ways, at 5 pm.")
    assert [(v.text, numbers.checkable(v)) for v in values] == [("two", True), ("three", False), ("5", True)]


@pytest.mark.parametrize("text", [
    "Plugins are designed to not perform any I/O, and hours above 240 were forfeited.",
    "The middleware reads `allow_headers` before it sends a 400 response to browsers.",
])
def test_the_lighter_parses_lose_no_tag_lemma_or_dependency_of_the_full_one(text):
    from pipeline.claims import load_nlp, mask_dots

    full = load_nlp()(mask_dots(text))  # every component, entities included
    tagged = {t.lemma_.lower() for t in full if t.is_alpha or "_" in t.text}  # the words, not "400" or "/"
    assert tagged <= lemmas_mod.lemmas(text)  # read from the lemma tables, untagged
    light = meaning.parse(text)  # no entity recogniser
    assert [(t.tag_, t.lemma_, t.dep_, t.head.i) for t in light] == [(t.tag_, t.lemma_, t.dep_, t.head.i) for t in full]


def test_a_word_has_every_lemma_the_rule_lemmatizer_could_give_it():
    assert lemmas_mod.word_lemmas("ran") == {"ran", "run"}  # an irregular verb
    assert "retry" in lemmas_mod.word_lemmas("retries") and "hour" in lemmas_mod.word_lemmas("hours")  # suffix rules
    assert {"leaf", "leave"} <= lemmas_mod.word_lemmas("leaves")  # as a noun and as a verb
    assert lemmas_mod.word_lemmas("middleware") == {"middleware"}
    assert lemmas_mod.lemmas("The backups were kept on tape.") >= {"backup", "be", "keep", "tape"}


def test_parse_all_parses_what_is_not_cached_and_parse_then_reads_the_cache():
    first, second, again = meaning.parse_all(["The VPN is required.", "Leave isn't paid out.", "The VPN is required."])
    assert first is again and first.user_data["text"] == "The VPN is required."
    assert [t.dep_ for t in second] == [t.dep_ for t in meaning.parse("Leave isn't paid out.")]
    assert meaning.parse("Leave isn't paid out.") is second


def _aligned(claim: str, about: list[str], others: list[str]) -> align.Alignment:
    """An alignment whose candidates are `about` (similar to the claim) then `others` (not)."""
    candidates = [(t, 0, 0.8) for t in about] + [(t, 0, 0.3) for t in others]
    return align.Alignment(claim, sentence=about[0], candidates=candidates, cited=True)


def test_a_value_counts_as_stated_only_where_the_claims_matter_is():
    claim = "Merit promotion openings are posted internally for two weeks and open to any employee."
    (weeks,) = numbers.extract_values(claim)
    about = ["A merit promotion opening is posted internally and open to any employee."]
    elsewhere = ["This creates parity between the two services.", "Begin at least two weeks before your last day."]
    assert not align._stated_near(_aligned(claim, about, elsewhere), claim, weeks)
    # the value beside another of the claim's words, in a sentence less like it as a whole
    beside = ["Openings are posted for two weeks."]
    assert align._stated_near(_aligned(claim, about, [*elsewhere, *beside]), claim, weeks)
    assert align._stated_near(_aligned(claim, about + ["It stays posted for two weeks."], []), claim, weeks)


def test_a_version_in_the_headings_of_a_sentence_about_the_claim_is_stated_there():
    claim = "Git 2.35.2 exists to address a single security issue, CVE-2022-24765."
    version = numbers.extract_values(claim)[0]
    sentence = "This release merges up the fixes that appear in v2.30.3 to address the security issue CVE-2022-24765."
    evidence = ["Git v2.36 Release Notes\n\nUpdates.", f"Git v2.35.2 Release Notes\n\n{sentence}"]
    a = align.Alignment(claim, sentence="Updates.", candidates=[("Updates.", 0, 0.3), (sentence, 1, 0.8)], cited=True)
    assert align._stated_near(a, claim, version, evidence)
    other = ["Git v2.36 Release Notes\n\nUpdates.", f"Git v2.32.1 Release Notes\n\n{sentence}"]
    assert not align._stated_near(a, claim, version, other)
    far = align.Alignment(claim, sentence="Updates.", candidates=[("Updates.", 0, 0.3), (sentence, 1, 0.3)], cited=True)
    assert not align._stated_near(far, claim, version, evidence)  # the sentence under it is not about the claim


@pytest.mark.parametrize(("a", "b", "alike"), [
    ("follow_symlink", "follow_symlinks", True), ("Pay.gov", "pay-gov", True),
    ("allow_origins", "allow_methods", False), ("on_receive", "on_message", False),
])
def test_names_spelled_alike(a, b, alike):
    assert spelled_alike(a, b) is alike


@pytest.mark.parametrize(("text", "negative"), [
    ("* `WebSocketException(code=1008, reason=None)` You can set any code valid as defined.", False),
    ("The `samesite` flag is 'none' by default.", False),
    ("None of the codes are valid.", True),
    # idioms and answer words that negate nothing, and a negation with an exception ("only X")
    ("Scripts run from the package root no matter which directory you call npm run from.", False),
    ("It is not only fast but small.", False),
    ("Usually not: the cache verifies itself.", False),
    ("It should never be necessary to clear the cache for any reason other than reclaiming disk space.", False),
    ("It should never be necessary to clear the cache.", True),
    ("The first line should be 50 characters or less, and no more than 72 characters.", False),  # a bound
])
def test_code_and_quoted_values_are_no_negation(text, negative):
    assert align.negated(text) is negative


def test_a_bound_is_no_direction():
    assert align.direction("ideally 50 characters or fewer") == 0
    assert align.direction("preferably 50 characters or less, and no more than 72 characters") == 0
    assert align.direction("Caching increases the throughput.") == 1
    assert align.direction("The rate is lower after miscarriage than after live birth.") == -1  # a comparison
    assert align.direction("The rate is higher than after live birth.") == 1


EXAMPLE = """The following `scale` example sets the replica count of the `web` service.

```
ops scale --service web --replicas 4
```

Output:

```
{
    "Service": "web",
    "Replicas": 4,
    "Status": "Pending"
}
```
"""


def test_a_code_block_is_read_whole_with_its_lead_in():
    sentences = markdown_sentences(EXAMPLE)
    status = next(i for i, s in enumerate(sentences) if "Status" in s)
    output = 'Output: "Service": "web", "Replicas": 4, "Status": "Pending"'  # braces state nothing
    assert whole_block(sentences, status) == output and whole_block(sentences, sentences.index("Output:")) == output
    assert whole_block(sentences, 0) == "The following `scale` example sets the replica count of the `web` service. " \
        "ops scale --service web --replicas 4"
    cands = [text for text, _ in evidence_candidates("The response shows its Status as Pending.", [EXAMPLE])]
    assert output in cands and "```" not in cands and "{" not in cands  # fences and braces state nothing


def test_a_claim_about_a_code_example_is_backed_by_its_names_and_values():
    assert code.led_blocks(EXAMPLE)[1] == 'Output:\n{\n    "Service": "web",\n    "Replicas": 4,\n    "Status": "Pending"\n}'
    assert code.backed("The response shows its Status as Pending and Replicas as 4.", [EXAMPLE])
    assert code.backed("The example passes --replicas 4 for the web service.", [EXAMPLE])
    assert not code.backed("The response shows its Status as Running.", [EXAMPLE])  # not in the example
    assert not code.backed("The response shows Replicas as 5 and Status as Pending.", [EXAMPLE])
    assert not code.backed("Scaling shows a Pending status.", [EXAMPLE])  # one name: too little to go on
    assert not code.backed("The response shows its Status as Pending.", [EXAMPLE.replace("```", "")])  # no code


def test_the_words_a_claim_about_a_code_example_adds_are_those_no_passage_states():
    added = "The response shows its Status as Pending, so the scale-up typically completes within minutes."
    assert [t.text for t in details.unstated_words(added, [EXAMPLE])] == ["completes", "minutes"]
    assert details.unstated_words("The response shows its Status as Pending and Replicas as 4.", [EXAMPLE]) == []
    # "response" and "shows" are how answers describe an example, unless no passage holds code
    assert [t.text for t in details.unstated_words("The response shows it.", [EXAMPLE.replace("```", "")])] == ["response", "shows"]


def test_an_example_option_or_output_key_given_another_value_is_the_examples_value_swapped():
    assert rivals.value_swapped("Run it with --replicas 6 for the web service.", EXAMPLE) == ("6", "--replicas 4")
    assert rivals.value_swapped("The response shows Replicas as 5.", EXAMPLE) == ("5", "Replicas: 4")
    assert rivals.value_swapped("The response shows its Status as Running.", EXAMPLE) == ("Running", "Status: Pending")
    assert rivals.value_swapped("The response shows its Status as Pending.", EXAMPLE) == ("", "")
    assert rivals.value_swapped("Its Status along with the Replicas comes back.", EXAMPLE) == ("", "")  # no value
    assert rivals.value_swapped("The service's status is running.", EXAMPLE) == ("", "")  # a word, not the key
    url = 'Output:\n```\n{"Code": {"Location": "https://example.com/snapshots/my-function"}}\n```'
    assert rivals.value_swapped("The Code section has a Location URL pointing at the code.", url) == ("", "")  # its kind
    assert rivals.value_swapped("The Code section has a Location Bucket.", url) == ("Bucket", "Location: https://example.com/snapshots/my-function")
    two = EXAMPLE + '\n```\n{"Status": "Running"}\n```\n'
    assert rivals.value_swapped("The response shows its Status as Failed.", two) == ("", "")  # which one is meant?
    synopsis = "`--leak-check=<no|summary|yes|full>` and `--kinds=<set> [default: definite,possible]`"
    assert rivals.value_swapped("Use --leak-check=full, and --kinds (definite,possible by default).", synopsis) == ("", "")
    assert rivals.value_swapped("Pass --content Bucket=...,Key=layer.zip.", "--content Bucket=layers-123,Key=layer.zip") == ("", "")


def test_an_option_no_document_has_given_an_examples_value_is_the_examples_option_swapped():
    example = "The following example deletes the configuration for the GREEN alias.\n```\naws lambda delete-config " \
              "--function-name my-function --qualifier GREEN\n```"
    assert rivals.value_swapped("Name the alias with --alias GREEN.", example) == ("--alias", "--qualifier")
    assert rivals.value_swapped("Name the alias with --qualifier GREEN.", example) == ("", "")  # the example's own
    assert rivals.value_swapped("Name the alias with --alias BLUE.", example) == ("", "")  # no option takes BLUE
    both = example + "\n```\naws lambda get-config --function-name GREEN\n```"
    assert rivals.value_swapped("Name the alias with --alias GREEN.", both) == ("", "")  # which option is meant?


def test_a_condition_after_the_statement_runs_to_the_end_of_the_sentence():
    sentence = ("A local file is uploaded if its size is different, its modified time is newer than the copy's, "
                "or the file does not exist in the bucket.")
    assert meaning.asserted(sentence) == "A local file is uploaded ."
    assert not polarity._negation_differs("It is also uploaded when its modified time is newer than the copy's.",
                                          sentence, [sentence])


def test_a_negated_answer_without_a_verb_answers_the_question():
    source = "Note that the bucket must be empty before it can be removed."
    assert not polarity._negation_differs("Not with a plain rb, because the bucket has to be empty first.", source, [source])


def test_words_that_describe_an_example_are_no_added_detail():
    claim = "The command's response returns the Status as Pending."
    assert details.unstated_details(claim, [EXAMPLE]) == ""
    claim = "Scaling the service gives a response that returns the Status as Pending."
    assert details.unstated_details(claim, [EXAMPLE]) == ""
    assert details.unstated_details(claim, [EXAMPLE.replace("```", "")]) != ""  # prose: "response returns" is news


def test_the_frame_of_a_statement_is_no_added_detail():
    passage = "Retries back off by fetch-retry-factor, between fetch-retry-mintimeout and fetch-retry-maxtimeout."
    assert details.unstated_details("The wait between attempts is tuned by fetch-retry-factor.", [passage]) == ""
    # what the statement says of its subject is still read: a run outside the frame
    assert details.unstated_details("The wait between attempts is tuned by fetch-retry-factor, which the registry mirrors "
                                    "cache overnight.", [passage]) == "registry mirrors cache overnight"
    # a subject clause ("One quirk kept for …") and a clause before a semicolon have their frame too
    doc = meaning.parse("One quirk kept for compatibility is that -p means --package in npx.")
    assert details._framing([doc[0], doc[1], doc[2]])
    doc = meaning.parse("That behaviour is governed by policy CMP0077; when the policy is not set, CMake warns.")
    assert details._framing([doc[1], doc[3]]) and not details._framing([doc[1], doc[3], doc[6]])  # "CMP0077": a name


def test_a_list_is_read_whole_with_its_lead_in():
    sentences = ["Intro.", "There are three methods:", "* `on_connect(ws)`", "* `on_receive(ws, data)`",
                 "* `on_disconnect(ws, code)`", "After the list."]
    whole = "There are three methods: * `on_connect(ws)` * `on_receive(ws, data)` * `on_disconnect(ws, code)`"
    assert whole_list(sentences, 3) == whole and whole_list(sentences, 1) == whole
    assert whole_list(sentences, 0) == "" and whole_list(sentences, 5) == ""
    assert whole_list(["No lead-in here.", "* a", "* b"], 1) == ""  # an item list with no "…:" lead-in
    assert whole_list(["Just one:", "* a"], 1) == ""


def test_a_conceding_clause_is_an_added_statement():
    claim = "Backups run every night, although they are paused automatically during maintenance windows."
    extra = details.unstated_details(claim, ["Backups run every night at 2 am."])
    assert extra == "paused automatically during maintenance windows"
    assert details.in_added_clause(claim, extra) and not details.in_added_clause(claim, "every night")
    # an explanation the documents state is no addition
    assert details.unstated_details("Because backups run every night, you can restore yesterday's files.",
                                    ["Backups run every night. You can restore yesterday's files from them."]) == ""


def test_two_unstated_words_in_an_explaining_clause_are_the_addition():
    claim = "Subclass the endpoint and define async methods, because synchronous handler methods aren't supported."
    passages = ["Subclass the endpoint and define async methods named after the HTTP methods."]
    assert details.unstated_details(claim, passages) == "synchronous handler methods aren't supported"
    # "This is because …" is the statement itself, not a clause beside it
    assert not details.in_added_clause("This is because the Act doesn't let agencies accept it.", "let")


def test_a_name_in_place_is_read_at_every_place_and_not_as_a_links_site():
    claim = "Most GSA virtual meetings should be conducted in Microsoft Teams."
    sentence = ("Zoom is for a need which cannot be met with Google Meet - most GSA virtual meetings should be "
                "conducted in Google Meet.")  # the name's second place is the one in the claim's
    assert rivals.name_in_place(claim, sentence, sentence) == ("Microsoft Teams", "Google Meet")
    claim = "TTS recommends Bitwarden, which is open source and runs on Windows and Linux."
    sentence = "We recommend using KeePassXC (keepassxc.org) which is open source and runs on Windows and Linux."
    assert rivals.name_in_place(claim, sentence, sentence) == ("Bitwarden", "KeePassXC")


@pytest.mark.parametrize(("name", "passage", "rival"), [
    ("CARGO_GIT_FETCH_WITH_CLI", "Environment: `CARGO_NET_GIT_FETCH_WITH_CLI`, and `CARGO_HOME`.", "CARGO_NET_GIT_FETCH_WITH_CLI"),
    ("PIP_USER_AGENT_DATA", "the variable `PIP_USER_AGENT_USER_DATA` adds a JSON string", "PIP_USER_AGENT_USER_DATA"),
    ("tests/vg_runtest", "To run a subset: perl tests/vg_regtest memcheck", "tests/vg_regtest"),
    # another word in the name's place, or a shorter name the claim's extends: no misspelling
    ("request.client.ip", "`request.client.host` and `request.client.port`", ""),
    ("CMAKE_DEFAULT_BUILD_TYPE", "set `CMAKE_BUILD_TYPE` to Release", ""),
    ("CALLGRIND_ENABLE_INSTRUMENTATION", "`CALLGRIND_START_INSTRUMENTATION`: start it", ""),
    ("--prune", "Because of the `--delete` parameter", ""),
    ("Bitwarden", "We recommend KeePassXC.", ""),  # a product's name is no code name
])
def test_a_code_name_no_document_mentions_may_misspell_one_the_evidence_has(name, passage, rival):
    assert rivals.spelled_like(name, ["Unrelated text.", passage]) == ((rival, 1) if rival else ("", -1))


def test_a_documented_name_in_another_names_very_place_is_a_swap():
    claim = "File an issue in the nodejs/admin repository with the title Remove Collaborator."
    sentence = "Open an issue in the nodejs/build repository titled `Remove Collaborator` to ask for it."
    passage = sentence + " Ask nodejs/admin for moderation."  # the claim's name is documented, elsewhere
    assert rivals.name_in_place(claim, passage, sentence) == ("nodejs/admin", "nodejs/build")
    # a name of another make (a link's site) in the place is no swap of a documented one
    listed = "Its bindings are in src/node_wasi.cc and lib/wasi.js."
    assert rivals.name_in_place(listed, "* src/node_wasi.cc (github.com) * lib/wasi.js", "* src/node_wasi.cc (github.com)") == ("", "")


def test_a_reference_entry_is_read_with_its_fields_and_description():
    sentences = ["Config Settings > fetch-retries", "* Default: 2", "* Type: Number",
                 'The "retries" config for the `retry` module.', "npm will retry idempotent requests."]
    assert field_entry(sentences, 0) == ('Config Settings > fetch-retries * Default: 2 * Type: Number '
                                         'The "retries" config for the `retry` module.')
    assert field_entry(sentences, 3) == ""  # no field follows
    assert field_entry(["Primordials with known issues", "* `SafePromiseAny`", "* `SafePromiseRace`", "Use care."], 0) == ""


def test_a_list_item_is_read_whole_to_its_default():
    sentences = ["* `history` {string[]} Initial list of history lines.",
                 "* `historySize` {number} Maximum number of history lines retained.",
                 "To disable the history set this value to `0`.",
                 "This option makes sense only if `terminal` is set. **Default:** `30`.",
                 "* `prompt` {string} The prompt string to use."]
    whole = " ".join(sentences[1:4])
    assert whole_item(sentences, 1) == whole and whole_item(sentences, 3) == whole
    assert whole_item(sentences, 0) == "" and whole_item(sentences, 4) == ""  # one sentence each


def test_a_sentence_going_on_with_a_list_item_is_read_with_it():
    evidence = ["* Tier 1 - Must always be working. A release will not be shipped if the tool is broken.\n\n"
                "* Tier 2 - Must work for LTS releases. An LTS release will not be shipped if the tool is broken.\n\n"
                "* Tier 3 - If possible its test suite will be run at least nightly.\n  Does not block shipping a release.\n\n"
                "* Tier 4 - Does not block shipping a release."]
    texts = [t for t, _ in evidence_candidates("A Tier 3 tool does not block shipping a release.", evidence)]
    assert "* Tier 3 - If possible its test suite will be run at least nightly. Does not block shipping a release." in texts


def test_a_range_run_the_other_way_is_reversed():
    sentence = "The given sequence of paths is processed from right to left."
    assert roles.reversed_order("The paths are processed from left to right.", [sentence]) == "from right to left"
    assert roles.reversed_order("The paths are processed from right to left.", [sentence]) == ""
    assert roles.reversed_order("It goes from A to B.", ["It goes from B to A, and then from A to B."]) == ""


def test_ordered_words_swapped_around_the_same_predicate_are_a_flip():
    sentence = "Settings that appear later in the file take precedence over settings that appear earlier."
    swapped = "Settings that appear earlier in the file take precedence over those that appear later."
    assert roles.antonyms_swapped(swapped, [sentence]) == "later in the file take precedence over settings that appear earlier"
    assert roles.antonyms_swapped("Settings appearing later in the file take precedence over earlier ones.", [sentence]) == ""
    assert roles.antonyms_swapped("Earlier settings are overridden by later ones.", [sentence]) == ""  # one word shared
    both = sentence + " In the defaults block, settings that appear earlier take precedence over settings that appear later."
    assert roles.antonyms_swapped(swapped, [both]) == ""  # it says the claim's order too


def test_another_code_terms_entry_flips_nothing():
    entry = "`KEEP_TEMP` (new in version 2.1): Keep the temporary files of the build."
    assert flips.flipped("NO_CLEANUP tells the tool not to keep the temporary files of the build.", [entry]) == ""
    # the entry of the claim's own term does
    assert flips.flipped("KEEP_TEMP tells the tool not to keep the temporary files of the build.", [entry]) != ""


def test_a_placeholder_is_one_word_to_the_parser():
    assert meaning.mask_placeholders("older than the <min> version, see <path-to-source>") == \
        "older than the _min_ version, see _path_to_source_"
    claim = "Any build tool older than the <min> version stops processing the project and reports an error."
    evidence = "If the running version of the tool is lower than the `<min>` version it will stop processing the project and report an error."
    assert flips.flipped(claim, [evidence]) == ""


def test_a_negation_after_a_semicolon_is_its_own_statement():
    claim = "Inside a loop some of its effects are limited to the loop; for example, LOOP_VAR is not set outside it."
    evidence = "Calling it inside a loop limits some effects to the loop. For example, the LOOP_VAR variable won't be set outside it."
    assert flips.flipped(claim, [evidence]) == ""


@pytest.mark.parametrize(("text", "negative"), [
    ("The option keeps the subfolder's targets out of the default build.", True),
    ("It leaves the generated files out of the package.", True),
    ("It keeps the files in the package.", False),
])
def test_keeping_something_out_is_a_negation(text, negative):
    assert align.negated(text) is negative


def test_a_version_under_a_products_name_is_stated_as_a_bare_version(settings, embedder):
    from lab.scoring import score_pairs

    evidence = [["The tool runs each test. New in version 3.16: Added the SKIP_OUTPUT property. "
                 "Versions of the tool before 2.6 fail with an error."]]
    stated, rival_in_claim = score_pairs(
        ["SKIP_OUTPUT has been available since Tool 3.16.",
         "Value 23 has been supported since Tool 3.20, and Tool 3.25 recognizes value 26."],
        [evidence[0], ["Tool 3.25 and later recognize 26 as a valid value."]],
        method="default", embedder=embedder, settings=settings)
    assert stated.conflict == ""  # not "2.6": "3.16" is stated, as "version 3.16"
    assert rival_in_claim.conflict == ""  # "3.25" is the claim's own other value, no rival of "3.20"


@pytest.mark.parametrize(("claim", "evidence", "flip"), [
    ("On every run the file is rewritten, even if its content has not changed.",
     "The file is modified on later runs only if its content is changed.", "only if its content is changed"),
    ("Even if the target is up to date and doesn't need building, the step still runs.",
     "The step will only run when the target itself is built.", "when the target itself is built"),
    # the same condition both ways, or no "only": no flip
    ("The file is rewritten even if its content has changed.", "The file is modified only if its content is changed.", ""),
    ("The file is rewritten even if its content has not changed.", "The file is modified if its content is changed.", ""),
])
def test_even_if_not_against_only_if_is_a_flip(claim, evidence, flip):
    from pipeline.verify.polarity import condition_flipped

    assert condition_flipped(claim, [evidence]) == flip


def test_a_version_the_passage_states_is_no_added_detail():
    passages = ["`KEEP_TEMP` (new in version 3.19): Keep the temporary files of the build."]
    assert details.unstated_details("KEEP_TEMP, new in version 3.19, keeps the temporary files of the build.", passages) == ""


def test_an_added_detail_is_quoted_as_the_claim_writes_it():
    # the parse masks inner dots ("cache_d"); the footnote quotes the claim's own "cache.d", also
    # when the claim has underscores of its own
    extra = details.unstated_details("KEEP_TEMP writes its files to the cache.d folder of Ninja.",
                                     ["KEEP_TEMP writes its files."])
    assert extra == "cache.d folder of Ninja"


@pytest.mark.parametrize(("claim", "evidence", "flip"), [
    ("It is implemented by all generators, not just the Makefile and Ninja generators.",
     "Note: This option is implemented only by Makefile Generators and Ninja Generators.",
     "only by Makefile Generators and Ninja Generators"),
    ("The cache is only used for wheels.", "The cache is used not only for wheels, but also for HTTP responses.",
     "not only for wheels"),
    # the restriction kept, or another matter restricted, or "only if" (a condition): no flip
    ("It is only implemented by the Makefile and Ninja generators.",
     "This option is implemented only by Makefile Generators and Ninja Generators.", ""),
    ("Logs are kept not just locally.", "The option is implemented only by Makefile Generators.", ""),
    ("Backups run not just on weekdays.", "Backups run only if the disk is mounted.", ""),
])
def test_a_restriction_lifted_or_imposed_is_a_flip(claim, evidence, flip):
    from pipeline.verify.polarity import restriction_flipped

    assert restriction_flipped(claim, [evidence]) == flip


@pytest.mark.parametrize(("claim", "rival"), [
    ("With the Ninja generator this places the command in the interactive pool.", ("interactive", "console")),
    ("With the Ninja generator this places the command in the console pool.", ("", "")),  # the same name, unquoted
    ("With the Ninja generator this puts the command in a pool.", ("", "")),  # nothing in its place
])
def test_a_plain_word_where_the_source_writes_a_code_name(claim, rival):
    sentence = "With the `Ninja` generator, this places the command in the `console` `pool`."
    assert rivals.name_in_place(claim, sentence, sentence) == rival


def test_a_plain_word_in_place_of_a_code_names_last_word():
    sentence = "To avoid that happening, call the `corepack pack` command while you still have network access."
    claim = "To avoid that, run the corepack prepare command while you still have network access."
    assert rivals.name_in_place(claim, sentence, sentence) == ("prepare", "corepack pack")


@pytest.mark.parametrize(("claim", "sentence", "rival"), [
    # a list's last item, before the clause's end
    ("You can filter by advisory attributes, currently severity and cvss, for example.",
     "Currently that includes `severity` and `cwe`.", ("cvss", "cwe")),
    ("You can filter by advisory attributes, currently severity and cwe.", "Currently that includes `severity` and `cwe`.",
     ("", "")),
    # a word for the code name's kind or state is a paraphrase, not another name
    ("The default is enabled.", "The default is `True`.", ("", "")),
    ("Point it at another file with the environment variable.", "Point it at another file with `PIP_CONFIG_FILE`.",
     ("", "")),
])
def test_a_plain_word_where_the_source_ends_a_clause_with_a_code_name(claim, sentence, rival):
    assert rivals.name_in_place(claim, sentence, sentence) == rival


def test_a_pronoun_subject_stands_for_the_subject_before_it():
    source = ("Their syntax is a subset of Requirements Files, with several kinds of syntax not allowed: "
              "constraints must have a name, they cannot be editable, and they cannot specify extras.")
    claim = "Every constraint must have a name, and constraints can be editable but cannot specify extras."
    assert flips.flipped(claim, [source]) == "they cannot be editable"
    assert flips.flipped("Constraints must have a name and cannot be editable.", [source]) == ""


def test_a_verb_joined_by_or_shares_the_negation_before_it():
    doc = meaning.parse("Constraints cannot be editable or specify extras, but are read and kept.")
    said = {t.text: meaning._negated(t) for t in meaning._predicates(doc)}
    assert said["editable"] and said["specify"]  # "cannot … or specify"
    assert not said["kept"]  # after "but", a statement of its own


def test_a_not_that_sets_an_alternative_aside_is_rather_than():
    from pipeline.verify.polarity import _negation_differs, negated

    source = "They land in pip's HTTP cache, not its wheel cache, and are used normally."
    claim = "They land in pip's HTTP cache rather than its wheel cache and are used normally."
    assert not negated(source) and not _negation_differs(claim, source, [source])
    assert negated("They do not land in the wheel cache.")
    doc = meaning.parse(source)
    assert [meaning._idiom(t) for t in doc if t.lower_ == "not"] == [True]


def test_no_longer_negates_the_verb_it_qualifies():
    doc = meaning.parse("It upgrades a dependency only if it no longer satisfies the new requirements.")
    assert {t.text: meaning._negated(t) for t in meaning._predicates(doc)}["satisfies"]


def test_a_word_after_a_slash_is_said_as_the_one_before_it():
    source = "Confirm the steward agrees to keep the information confidential and not to use/disclose to their employer."
    claim = "The steward will keep the information confidential and will not use it or disclose it to their employer."
    assert flips.flipped(claim, [source]) == ""
    doc = meaning.parse(source)
    assert {t.text: meaning._negated(t) for t in meaning._predicates(doc)}["disclose"]


def test_a_verb_joined_to_a_negating_verb_is_not_under_it():
    doc = meaning.parse("It allows users to avoid the confusing behavior and only run on npm publish.")
    said = {t.text: meaning._negated(t) for t in meaning._predicates(doc)}
    assert not said["run"]  # "avoid X and run Y": Y is run


def test_an_embedded_question_and_a_list_of_what_there_is_assert_no_negation():
    claim = "Responders can fix the immediate problem without worrying about whether the work is billable."
    source = "Responders are entitled to fix the immediate problem, whether or not the work is billable."
    assert flips.flipped(claim, [source]) == ""
    claim = "A repository is inactive if there have been no new commits or comments on issues or pull requests for a while."
    source = "A repository is inactive if there haven't been any new commits or comments on issues or pull requests in a while."
    assert flips.flipped(claim, [source]) == ""


def test_a_verb_that_removes_the_need_negates_what_is_needed():
    source = "By providing a permanent identifier, we reduce the need for userland code to inspect error messages."
    assert flips.flipped("Userland code no longer needs to inspect error messages.", [source]) == ""
    assert flips.flipped("Userland code still needs to inspect error messages.", [source]) != ""


def test_two_code_names_of_one_make_compare_their_context_by_stem():
    sentence = "The tool will also honour `CACHE_DIR`."
    assert rivals.name_in_place("The tool also honours the CACHE_ROOT setting.", sentence, sentence) == ("CACHE_ROOT", "CACHE_DIR")
    assert rivals.name_in_place("The tool also honours CACHE_DIR.", sentence, sentence) == ("", "")
    # a proper name is compared word for word, as before
    sentence = "The tool will also honour Google Meet."
    assert rivals.name_in_place("The tool also honours the Microsoft Teams setting.", sentence, sentence) == ("", "")


def test_a_hedged_reply_before_a_colon_negates_nothing_after_it():
    assert not polarity.negated("Not necessarily: it is easy to write the missing wrapper yourself.")
    assert not polarity.negated("Not by default: you have to turn it on.")
    assert polarity.negated("Not all options are supported: see the list.")  # a statement, not a reply
    assert details.unstated_details("Not necessarily: the wrapper is easy to write.", ["The wrapper is easy to write."]) == ""


def test_there_is_nothing_to_do_negates_the_doing():
    assert meaning.negation_scopes("There's nothing extra to install.") == [("There 's extra", frozenset({"install"}))]
    source = ["vgdb is provided as part of the distribution.", "You do not need to install it separately."]
    assert not polarity._negation_differs("vgdb comes with the distribution, so there's nothing extra to install.",
                                          " ".join(source), source)


def test_a_statement_about_some_of_a_thing_does_not_flip_one_about_the_thing():
    source = ["This is the access that made Helgrind realise that Helgrind is reporting a race."]
    assert flips.flipped("Helgrind never reports a race where both accesses are reads.", source) == ""
    assert flips.flipped("Helgrind never reports a race.", source) != ""


def test_a_thing_named_by_most_of_its_restricting_clause_is_the_same_thing():
    source = ["An earlier change that broke proxy detection has been reverted."]
    assert flips.flipped("It keeps the earlier change to proxy detection.", source) != ""
    assert flips.flipped("The release keeps the earlier change to the installer.", source) == ""


def test_a_verb_switched_on_is_the_opposite_of_it_switched_off():
    source = ["By contrast with normal use, you probably do want to turn optimisation on."]
    assert flips.flipped("You should turn optimisation off.", source) == "to turn optimisation on"
    assert flips.flipped("You should turn optimisation on.", source) == ""


def test_words_that_attribute_a_statement_to_the_documents_add_nothing():
    assert details.unstated_details("The manual's general advice is to avoid memory recycling.", ["Avoid memory recycling."]) == ""
    assert details.unstated_details("The README explains that you can run it straight from the build tree.",
                                    ["You can run it straight from the build tree."]) == ""
    assert details.unstated_details("The release notes list limitations for code compiled with clang.",
                                    ["Limitations for code compiled with clang."]) == ""


def test_a_bound_after_never_and_leaving_out_read_as_they_mean():
    assert not polarity.negated("So a threaded program never uses more than one CPU at once.")
    assert polarity.negated("Use --fn-skip to leave a dispatcher function out of the call graph.")
    assert polarity.negated("Another way is to simply leave out given functions in the call graph.")


def test_a_negated_result_clause_does_not_negate_the_advice_before_it():
    claim = "You can copy the headers into your own include directory so the build doesn't depend on Valgrind."
    source = ["You are encouraged to copy the valgrind/*.h headers into your project's include directory, "
              "so your program doesn't have a compile-time dependency on Valgrind being installed."]
    assert flips.flipped(claim, source) == ""
    assert flips.flipped("You must not copy the headers into your own include directory.", source) != ""


def test_a_negation_about_earlier_versions_is_no_flip_of_one_about_now():
    sentence = "For example, earlier versions of Cachegrind didn't have a branch predictor simulation."
    assert not polarity._negation_differs("Cachegrind can also simulate branch prediction.", sentence, [sentence])
    now = "Cachegrind doesn't have a branch predictor simulation."
    assert polarity._negation_differs("Cachegrind has a branch predictor simulation.", now, [now])


def test_a_name_written_out_is_no_rival_of_its_acronym():
    from pipeline.names import abbreviates

    assert abbreviates("GPL", "General Public License") and abbreviates("GNU GPL", "GNU General Public License")
    assert abbreviates("EAP", "Employee Assistance Program") and not abbreviates("GPL", "Google Public License Tool")
    sentence = "Valgrind is licensed under the GNU General Public License, version 2."
    assert rivals.name_in_place("Valgrind is licensed under the GNU GPL version 2.", sentence, sentence) == ("", "")
    assert rivals.name_in_place("Valgrind is licensed under the GNU Lesser License version 2.", sentence, sentence) != ("", "")


def test_what_a_claim_says_happens_by_default_against_an_option_entry_default():
    entry = ["`--check-stack-var=<yes|no> [default: no]`: Controls whether DRD detects data races on stack variables."]
    assert polarity.default_flipped("By default DRD already checks stack variables for races, so the report "
                                    "isn't caused by the stack.", entry) == "default: no"
    assert polarity.default_flipped("By default DRD doesn't check stack variables for races.", entry) == ""
    assert polarity.default_flipped("DRD can check stack variables for races.", entry) == ""  # no "by default"
    assert polarity.default_flipped("By default DRD checks heap blocks.", entry) == ""  # another matter


def test_a_negative_claim_agreeing_with_an_entry_default_is_no_negation_mismatch():
    entry = "`--check-stack-var=<yes|no> [default: no]`: Controls whether DRD detects data races on stack variables."
    assert not polarity._negation_differs("By default DRD doesn't check stack variables for races.", entry, [entry])


def test_a_which_clause_describes_and_restricts_nothing():
    source = ["Fenofibrate increases the amount of sulfatide, which seems beneficial against COVID-19."]
    assert flips.flipped("Fenofibrate reduces the amount of sulfatide which seems beneficial against covid-19.", source) != ""


def test_an_on_off_state_flipped_is_found_with_the_sources_words():
    source = ["Leak checking is on by default, and verbose output is off."]
    assert polarity.state_flipped("Leak checking is turned off by default.", source) == "Leak checking is on"
    assert polarity.state_flipped("Verbose output is enabled by default.", source) == "verbose output is off"
    assert polarity.state_flipped("The strict option defaults to true.", ["Strict mode is disabled by default."]) \
        == "Strict mode is disabled"
    assert polarity.state_flipped("Strict mode is not enabled by default.", ["Strict mode is on by default."]) != ""


def test_an_on_off_state_agreeing_or_about_something_else_is_no_flip():
    source = ["Leak checking is on by default, and verbose output is off."]
    assert polarity.state_flipped("Leak checking is on by default.", source) == ""
    assert polarity.state_flipped("Debug output is on by default.", source) == ""  # another thing's output
    assert polarity.state_flipped("It is off by default.", source) == ""  # whose state: unknown
    assert polarity.state_flipped("The cache is on the disk.", ["The cache is off by default."]) == ""  # a place
    assert polarity.state_flipped("Tracing can be turned on with --trace.", ["Tracing is off by default."]) == ""
    assert polarity.state_flipped("Colour output is off unless the output is a pipe.",  # a condition on one side only
                                  ["Colour output is on."]) == ""


def test_a_swap_needs_the_claims_name_in_the_same_statement():
    from pipeline.verify import roles

    source = ["You are encouraged to copy the `valgrind/*.h` headers into your project's include directory, so your "
              "program doesn't depend on Valgrind being installed. The Valgrind headers are under a BSD-style license."]
    assert roles.swapped("You can copy the BSD-licensed headers into your include directory, so the build doesn't "
                         "depend on Valgrind being installed.", source) == ""  # "BSD" is said of the license
    assert roles.swapped("npm ignores the .npmignore and uses the .gitignore.",
                         ["The .gitignore is ignored, and only the .npmignore is used."]) == "The .gitignore is ignored"


def test_a_default_said_as_off_agrees_with_an_entry_whose_default_is_no():
    entry = ["`--stacks=<yes|no> [default: no]`: Specifies whether stack profiling should be done."]
    assert polarity.default_flipped("Stack profiling is off by default, because it is slow.", entry) == ""
    assert polarity.default_flipped("Stack profiling is on by default.", entry) == "default: no"


def test_a_negation_in_a_purpose_an_only_or_an_answer_word_asserts_nothing_against_the_source():
    source = "To run Valgrind without having to install it, run coregrind/valgrind with VALGRIND_LIB set."
    assert not polarity._negation_differs("You can run coregrind/valgrind with VALGRIND_LIB set.", source, [source])
    source = "By default Massif measures only heap memory, i.e. memory allocated with `malloc` and `new`."
    claim = "Neither, necessarily: by default Massif only measures heap memory allocated with malloc, not memory from mmap."
    assert not polarity._negation_differs(claim, source, [source])
    source = "Per-line costs are not summed, because doing so is too difficult."  # the "not" is the source's too
    assert not polarity._negation_differs("Costs are only differenced per function, not per line.", source, [source])
    source = "By default Massif measures only heap memory, and it is slow."
    assert polarity._negation_differs("Massif only measures heap memory, and it is not slow.", source, [source])


def test_the_negation_of_a_light_verb_is_about_its_subject():
    from pipeline.verify import meaning, polarity

    assert meaning.negation_scopes("Build it with Solaris ld, since GNU ld can't be used.")[0][1] == {"ld"}
    evidence = ["Solaris ld has to be the first linker in the PATH. GNU ld cannot be used."]
    assert not polarity._negation_differs("Build it with Solaris ld, since GNU ld can't be used.", evidence[0], evidence)
    evidence = ["Solaris ld or GNU ld can be used."]
    assert polarity._negation_differs("Build it with Solaris ld, since GNU ld can't be used.", evidence[0], evidence)


def test_a_list_with_one_item_swapped_names_the_sources_item():
    source = ["The changes broke legitimate use cases like 'git lfs' and 'git annex.' This release reverts them."]
    assert rivals.list_swapped("They broke use cases such as git lfs and git subtree.", source) == ("git subtree", "git annex")
    assert rivals.list_swapped("They broke use cases such as git lfs and git annex.", source) == ("", "")
    assert rivals.list_swapped("It runs on Linux, macOS and Solaris.", ["It runs on Linux, macOS and FreeBSD."]) \
        == ("Solaris", "FreeBSD")


def test_a_list_item_said_otherwise_or_elsewhere_is_no_swap():
    assert rivals.list_swapped("It runs on Linux and Mac.", ["It runs on Linux and macOS."]) == ("", "")  # shortened
    assert rivals.list_swapped("It reads the config and the environment.",  # not a list of names
                               ["It reads the config and writes the log."]) == ("", "")
    assert rivals.list_swapped("Name and version identify a candidate.",  # a verb after the list
                               ["The project name and project version must be available."]) == ("", "")
    assert rivals.list_swapped("It runs on Linux, macOS and Solaris.",
                               ["It runs on Linux, macOS and FreeBSD.", "Solaris is supported too."]) == ("", "")


def test_a_behaviour_the_source_says_is_past_stated_as_the_present_is_a_flip():
    source = ['* "git branch -D <branch>" used to refuse to remove a broken branch ref that points at a missing '
              'commit, which has been corrected.']
    assert polarity.past_flipped("Git 2.33.1 made it a rule that git branch -D refuses to remove a broken branch "
                                 "ref.", source).startswith("used to refuse")
    assert polarity.past_flipped("git branch -D used to refuse to remove a broken branch ref; that has been "
                                 "corrected.", source) == ""
    assert polarity.past_flipped("git branch -D refused to remove broken refs before 2.33.1.", source) == ""
    assert polarity.past_flipped("git branch -D refuses to remove a broken ref.",  # not said to be past
                                 ["git branch -D used to refuse to remove a broken ref."]) == ""


def test_what_an_option_makes_fail_is_no_negation_of_the_option_being_added():
    source = '* "git clone --reject-shallow" option fails the clone as soon as we notice a shallow repository.'
    assert not polarity._negation_differs("Git 2.32 added a --reject-shallow option to git clone.", source, [source])
    source = "Drug X fails to improve survival in older patients."
    assert polarity._negation_differs("Drug X improves survival in older patients.", source, [source])


def test_keeping_a_change_is_the_opposite_of_reverting_it():
    assert opposed("keep", "revert") and opposed("revert", "retain")


def test_two_versions_conflict_only_in_the_same_place():
    from pipeline.numbers import extract_values

    claim, sentence = "The bug was fixed in 2.37.1.", "The rewrite that appeared in Git 2.25 lost a file, which was fixed."
    assert not numbers.same_role(claim, extract_values(claim)[0], sentence, extract_values(sentence)[0])
    claim, sentence = "Git 2.35 changed that behaviour.", "Git 2.36 changed that behaviour."
    assert numbers.same_role(claim, extract_values(claim)[0], sentence, extract_values(sentence)[0])
    claim, sentence = "It requires Python 3.8 or newer.", "- Use Python 3.10 or newer."
    assert numbers.same_role(claim, extract_values(claim)[0], sentence, extract_values(sentence)[0])
    claim, sentence = "It tries to, starting with Git 2.36.", "This release fixes a handful of regressions in Git 2.34."
    assert not numbers.same_role(claim, extract_values(claim)[0], sentence, extract_values(sentence)[0])
    claim, sentence = "It was introduced in CMake 3.13; it warns.", "In CMake 3.12 and below the command removes it."
    assert not numbers.same_role(claim, extract_values(claim)[0], sentence, extract_values(sentence)[0])


def test_a_claim_is_aligned_with_the_near_tie_that_states_its_values():
    import numpy as np

    cands = [("This release merges up the fixes that appear in v2.30.3 and v2.31.2.", 0),
             ("This release merges up the fixes that appear in v2.30.8 and v2.38.4.", 1)]
    headings = {0: ["Git v2.32.1 Release Notes"], 1: ["Git v2.39.2 Release Notes"]}
    claim = "Git 2.39.2 merges up fixes from v2.30.8 through v2.38.4."
    assert align._with_the_claims_values(claim, cands, np.array([0.80, 0.78]), [0, 1], headings) == 1
    assert align._with_the_claims_values(claim, cands, np.array([0.80, 0.60]), [0, 1], headings) == 0  # not near


def test_a_claim_is_aligned_further_down_with_a_sentence_that_states_more_of_its_values():
    import numpy as np

    cands = [("OS > os.setPriority([pid, ]priority). To avoid confusion, set `priority` to a constant.", 0),
             ("The `priority` input must be an integer between `-20` (high priority) and `19` (low priority).", 1)]
    claim = "os.setPriority() takes a priority between -20 (high priority) and 19 (low priority)."
    assert align._with_the_claims_values(claim, cands, np.array([0.85, 0.79]), [0, 1], {}) == 1
    assert align._with_the_claims_values(claim, cands, np.array([0.85, 0.65]), [0, 1], {}) == 0  # too far
    one = "os.setPriority() takes a priority up to 19."  # one value more is no reason to leave the closer sentence
    assert align._with_the_claims_values(one, cands, np.array([0.85, 0.79]), [0, 1], {}) == 0


def test_a_contrastive_not_after_a_comma_negates_what_follows_it():
    source = ["Test fixtures are not loaded when the server runs, but are loaded for unit tests."]
    assert flips.flipped("Test fixtures are loaded for unit tests, not when the server runs.", source) == ""
    assert flips.flipped("Test fixtures are not loaded for unit tests.", ["Test fixtures are loaded for unit tests."]) != ""


def test_not_until_dates_a_start_and_a_purpose_says_how_not_that_it_happens():
    assert flips.flipped("The service only began sending reports in version 4.2.",
                         ["The service did not begin sending reports until version 4.2."]) == ""
    assert flips.flipped("The service sends reports.", ["The service does not send reports."]) != ""
    assert flips.flipped("Cached files are kept between runs.",
                         ["Cached files are preserved. To remove cached files, run the clean command."]) == ""


def test_a_list_item_in_another_number_or_said_by_stem_is_no_swap():
    assert rivals.list_swapped("It copies every npm and git dependency.",
                               ["It copies all npm and git dependencies."]) == ("", "")
    assert rivals.list_swapped("For npm or --git sources it builds in a temporary directory.",
                               ["If the source holds several packages (such as npm or a git repository), name one."]) \
        == ("", "")


def test_an_opening_without_is_a_condition_and_a_negation_of_what_the_claim_never_says_flips_nothing():
    assert meaning.asserted("Without an API key you can still read public data.") == "you can still read public data."
    assert meaning.asserted("Without a token, the upload fails.") == "the upload fails."
    source = "Public data can be read with or without an account."
    assert not polarity._negation_differs("Without an API key you can read public data.", source, [source])
    source = "The --refresh flag learned to download everything without asking the server what is cached."
    assert not polarity._negation_differs("Version 3 added the --refresh flag for that case.", source, [source])
    assert polarity._negation_differs("The --refresh flag asks the server what is cached.", source, [source])
    source = "In that case the `option` command changes nothing and any normal variable of the same name remains set."
    assert polarity._negation_differs("option() overrides the variable even if it is already set.", source, [source])


def test_two_verbs_joined_by_and_share_what_follows_them():
    from pipeline.verify import details

    source = ["Plugins can be built and shipped as of `release 5` and are listed in the catalogue."]
    assert details.unstated_clause("Plugins can be built and shipped starting with release 5.", source) == ""
    assert details.unstated_clause("Plugins can be built, and they are signed by the release team automatically.",
                                   source) != ""


def test_everything_except_a_thing_flips_only_that_thing():
    source = ["`--purge`: This option makes `tool clean` remove only the `cache` folder in the build directory."]
    assert polarity.restriction_flipped("tool clean --purge removes everything in the build directory except the "
                                        "cache folder.", source).startswith("only the `cache` folder")
    assert polarity.restriction_flipped("tool clean --purge removes only the cache folder.", source) == ""
    assert polarity.restriction_flipped("It builds everything except tests.", ["Only tests are skipped."]) == ""


def test_the_other_extreme_of_the_same_thing_is_a_flip():
    source = ["Values in a deeper folder take precedence over its parents, where the system folder is the lowest rank."]
    assert roles.antonyms_swapped("A deeper folder wins, and the one in the system folder has the highest rank.",
                                  source).endswith("lowest rank")
    assert roles.antonyms_swapped("The system folder has the lowest rank.", source) == ""
    assert roles.antonyms_swapped("A deeper folder has a higher rank than the system folder.", source) == ""
    assert roles.antonyms_swapped("The highest rank goes to the command line.", source) == ""  # said of another thing


def test_a_default_said_after_an_aside_is_read_with_its_subject():
    entry = ["`--trace=<yes|no> [default: no]`: Specifies whether call tracing should be done."]
    assert polarity.default_flipped("Call tracing, on the other hand, is on by default.", entry) == "default: no"
    assert polarity.default_flipped("Call tracing, on the other hand, is off by default.", entry) == ""


def test_a_setting_applied_is_the_opposite_of_it_ignored():
    assert opposed("apply", "ignore") and opposed("unchanged", "change")
    assert flips.flipped("The setting applies in a member's manifest.",
                         ["The setting is only recognized in the root manifest, and ignored in member manifests."]) != ""


def test_a_verb_after_nor_is_negated_and_neither_nor_negates_once():
    for text in ("It neither creates nor updates the entry.", "It does not create nor update the entry."):
        assert [meaning._negated(t) for t in meaning._predicates(meaning.parse(text))] == [True, True]
    claim = "The command does nothing, keeping the variable and neither creating nor updating the cache entry."
    assert flips.flipped(claim, ["The cache entry is not created or updated."]) == ""
    assert flips.flipped(claim, ["The cache entry is updated."]) != ""


def test_a_time_frame_or_a_timing_clause_flips_nothing():
    assert flips.flipped("Before release 4, the sync command copied only the top folder.",
                         ['* After "sync", all folders are copied.']) == ""
    assert flips.flipped("The tool now stops the scan early.",
                         ["The tool was too quiet before it was ready to start the actual scan."]) == ""
    assert flips.flipped("The tool stops the scan early.", ["The tool starts the scan early."]) != ""


def test_a_term_in_single_quotes_and_a_claim_ordered_both_ways_flip_nothing():
    assert flips.flipped("The ones to fix are 'definitely lost' blocks.",
                         ["The tool doesn't say why the pointer to a block was lost."]) == ""
    assert flips.flipped("A hook says what will happen before the call, and what happened after it.",
                         ["Tell the hook what just happened, after a call takes place."]) == ""
    assert flips.flipped("The tool is told what happened before the syscall.",
                         ["Tell a tool what just happened, after a syscall takes place."]) != ""


def test_the_other_side_winning_is_a_reversed_precedence():
    evidence = ["Within a settings file, values in tool-specific tables override values in the shared table."]
    claim = "In a settings file, a value in the shared table overrides the same key in a tool-specific table."
    assert roles.precedence_reversed(claim, evidence) == "values in tool-specific tables override values in the shared table"
    assert roles.precedence_reversed("A value in a tool-specific table overrides the same key in the shared table.", evidence) == ""
    listed = evidence + ["Examples: - `--port=1` overrides `APP_PORT=1` - `APP_PORT=1` overrides a settings file with "
                         "`[shared] port = 1` - A tool-specific table `[tool] port = 2` overrides the key with same name "
                         "in the `[shared]` table."]  # each item is a side of its own; "same name" sits on both sides
    assert roles.precedence_reversed(claim, listed) == "values in tool-specific tables override values in the shared table"
    assert roles.precedence_reversed("The shared table is overridden by tool-specific tables.", evidence) == ""  # passive: same way
    assert roles.precedence_reversed("Tool-specific tables are overridden by the shared table.", evidence) != ""
    assert roles.precedence_reversed("The exclusion takes precedence over linked targets.",
                                     ["Linked targets take precedence over the exclusion."]) != ""
    assert roles.precedence_reversed("The exclusion takes precedence over linked targets.",
                                     ["Linked targets take precedence over the exclusion.",
                                      "Even so, the exclusion takes precedence over linked targets in a subproject."]) == ""


def test_actions_done_in_the_other_order_are_a_reversed_sequence():
    evidence = ["The move command copies the file to the destination and then deletes the original."]
    assert roles.sequence_reversed("The move command deletes the original first and only then writes the file.", evidence) != ""
    assert roles.sequence_reversed("It deletes the original before it copies the file.", evidence) != ""
    assert roles.sequence_reversed("It deletes the original after copying the file.", evidence) == ""
    assert roles.sequence_reversed("It copies the file first, then deletes the original.", evidence) == ""
    assert roles.sequence_reversed("It deletes the original.", evidence) == ""  # no order said


def test_a_clause_whose_own_action_no_passage_states_is_an_added_detail():
    page = ("By default the tool fetches packages from the public index, where anyone can upload packages. "
            "The resolver prefers pinned requirements, then the ones closest to the user's, by an approximate depth.")
    assert details.unstated_clause("By default the tool fetches packages from the public index, where anyone can "
                                   "upload packages once they pass an automated malware scan.", [page]) \
        == "once they pass an automated malware scan"
    assert details.unstated_clause("The resolver prefers pinned requirements, then those closest to the user's, by an "
                                   "approximate depth that is recalculated after every backtracking step.", [page]) \
        == "that is recalculated after every backtracking step"
    # the clause's action is stated, or it adds one new word only: a rewording, not a detail
    assert details.unstated_clause("The tool fetches packages from the public index, where anyone can upload them.", [page]) == ""
    assert details.unstated_clause("The tool fetches packages from the public index, which anyone may upload to.", [page]) == ""


def test_two_items_of_an_ordered_list_named_the_other_way_round_are_a_reversed_order():
    listed = ["The order in which settings are looked up is: * From a command-line flag. * From the user's "
              "`tool.toml` file. * The built-in default."]
    assert roles.list_order_reversed("The tool reads a setting from the tool.toml file first, then from the "
                                     "command-line flag, and then falls back to the built-in default.", listed) == listed[0]
    assert roles.list_order_reversed("The tool reads a setting from the command-line flag first, then from the "
                                     "tool.toml file, and then falls back to the built-in default.", listed) == ""
    # a list given in no particular order orders nothing
    assert roles.list_order_reversed("It reads the tool.toml file first, then the command-line flag.",
                                     [listed[0].replace("The order in which settings are looked up is", "Settings come from")]) == ""


@pytest.mark.parametrize(("claim", "evidence", "quote"), [
    ("These options default to the most restrictive value rather than to the current system or interpreter.",
     "These options all default to the current system/interpreter, and not to the most restrictive constraints "
     "(e.g. platform any).", "to the current system/interpreter, and not to the most restrictive constraints"),
    ("These options default to the current system or interpreter rather than to the most restrictive value.",
     "These options all default to the current system/interpreter, and not to the most restrictive constraints.", ""),
    ("They land in the wheel cache rather than the HTTP cache.", "They land in pip's HTTP cache, not its wheel cache.",
     "in pip's HTTP cache, not its wheel cache"),  # "cache" is on both sides: the other words tell them apart
    ("Use a token instead of a password.", "Use a password, not a token, when the registry asks.", "Use a password, not a token"),
    ("Use a token instead of a password.", "Tokens are kept in the keychain, not in a file.", ""),  # another matter
])
def test_keeping_what_the_source_sets_aside_is_a_flip(claim, evidence, quote):
    assert roles.alternative_reversed(claim, [evidence]) == quote


def test_words_of_an_identifier_are_stated_by_it():
    passage = ["This option does not work well with the `UNITY_BUILD` target property."]
    assert [t.text for t in details.unstated_words("It doesn't work well with unity builds.", passage)] == []
    assert [t.text for t in details.unstated_words("It doesn't work well with header builds.", passage)] == ["header"]


def test_a_name_the_cited_chunk_states_is_not_swapped_in_place():
    claim = "For each layer the output lists a LatestMatchingVersion entry with the version number."
    sentence = "The example displays a Lambda layer version with its number."
    candidates = [(sentence, 0, 0.8)]
    found = rivals.rival_in_place(claim, [], sentence, 0, [sentence], candidates, [sentence], [sentence])
    assert found[:2] == ("LatestMatchingVersion", "Lambda")
    example = '```\n{"LatestMatchingVersion": {"Version": 2}}\n```'
    evidence = [example, sentence]  # the chunk the claim cites comes first
    assert rivals.rival_in_place(claim, [], sentence, 1, [sentence], [(sentence, 1, 0.8)], [sentence], evidence,
                                 cited=1)[:2] == ("", "")  # the cited chunk's example has it
    # … a search result that has it elsewhere is no cited chunk: the name in its place still counts
    assert rivals.rival_in_place(claim, [], sentence, 1, [sentence], [(sentence, 1, 0.8)], [sentence], evidence,
                                 cited=0)[:2] == ("LatestMatchingVersion", "Lambda")


def test_a_thing_called_block_and_a_fallback_have_no_direction():
    assert align.direction("Freeing big blocks keeps small blocks in circulation.") == 0
    assert align.direction("A larger queue catches more uses of freed blocks.") == 1  # "blocks" counted no down
    assert align.direction("The call blocks the event loop.") == -1  # a verb still blocks
    assert align.direction("npm falls back to the default branch.") == 0
    assert align.direction("Names are lowercased; see the guide for more details.") == 0


@pytest.mark.parametrize(("claim", "sentence", "differs"), [
    # "except" is "unless" against a sentence with "unless": the same exception
    ("A full install runs every rule except those marked OPTIONAL.",
     "During a full install every rule runs unless it is marked OPTIONAL.", False),
    ("A full install runs every rule, even those marked OPTIONAL.",
     "During a full install every rule runs unless it is marked OPTIONAL.", True),
    # an option's value is no negation
    ("You can lift the cap with --error-limit=no, but it costs speed.",
     "To avoid this cap you can use the `--error-limit=no` option.", False),
])
def test_exceptions_and_option_values_read_as_the_source_reads(claim, sentence, differs):
    assert align._negation_differs(claim, sentence) is differs


def test_a_negation_the_aligned_windows_other_sentence_states_is_backed():
    claim = "The mirror must hold the same code as the original, so it may not hold packages missing upstream."
    window = ("The mirror is assumed to hold exactly the same code as the original. This also means that a "
              "mirror is not allowed to have packages which are not present upstream.")
    other = ["A registry holds an index which lists the available packages."]
    assert align._negation_differs(claim, window, other) is False
    kept = "The mirror is assumed to hold exactly the same code. A mirror may also hold packages missing upstream."
    assert align._negation_differs(claim, kept, [kept]) is True


def test_a_versions_open_range_is_no_added_detail():
    passage = ["- `3` (default of the 2024 edition, requires Rust 1.84+): changes how versions are picked."]
    assert details.unstated_details("The 2024 edition needs Rust 1.84 or later and changes how versions are picked.",
                                    passage) == ""
    assert details.unstated_details("The 2024 edition needs Rust 1.84 or a nightly toolchain and changes how versions "
                                    "are picked.", passage) == "nightly toolchain"
    # … nor in a clause joined to the claim, which is then too short to judge
    assert details.unstated_clause("The 2024 edition defaults to resolver 3, which needs Rust 1.84 or later.", passage) == ""
    assert details.unstated_clause("The 2024 edition defaults to resolver 3, which needs a nightly compiler toolchain "
                                   "later.", passage) != ""


def test_the_side_of_a_contrast_the_claim_restates_decides_its_polarity():
    sentence = "Skipping this does not cause crashes, but may cause the checker to report false errors after ioctls."
    assert align._negation_differs("Otherwise the checker may report false errors after ioctls.", sentence) is False
    assert align._negation_differs("Skipping it causes crashes.", sentence) is True


def test_clauses_set_side_by_side_are_read_apart_and_a_condition_is_not():
    # a comma splice joins two statements: the claim restates the first, which no negation touches
    splice = "Version 4.2 and later accept `zstd` as a valid codec, no release ships a decoder for it."
    assert align._negation_differs("Version 4.2 and later accept zstd as a valid codec.", splice) is False
    assert align._negation_differs("Release 4.2 ships a decoder for zstd.", splice) is True
    # "If you do not set X, it uses Y" is one statement, and so is a list before a relative clause
    assert sides.statements("If you do not set a registry, the tool uses the default index.") == [
        "If you do not set a registry, the tool uses the default index."]
    assert sides.statements("Alpha, beta and gamma are not supported, which is rare.") == [
        "Alpha, beta and gamma are not supported, which is rare."]


def test_a_claim_that_restates_both_sides_of_a_contrast_keeps_its_flip():
    sentence = ("The project helps code running on top of it to avoid making mistakes, "
                "but not doing so is not considered a vulnerability in the project.")
    flipped = ("The project helps code built on it avoid mistakes, and when such code does make them, "
               "that is treated as a vulnerability in the project.")
    assert align._negation_differs(flipped, sentence) is True
    assert align._negation_differs("The project helps code running on top of it avoid making mistakes.", sentence) is False


def test_a_condition_the_parser_finds_is_no_side_of_its_own():
    sentence = ("In case one of the tasks raises an exception, the following tasks will not get the "
                "opportunity to be executed.")
    assert sides.statements(sentence) == [sentence]
    assert align._negation_differs("If one of them raises an exception, the tasks after it still run.", sentence) is True



def test_a_value_that_stays_fixed_is_the_opposite_of_one_that_can_change():
    assert opposed("change", "fixed")
    evidence = ["This date can change when making changes to your bucket, such as editing its bucket policy."]
    assert flips.flipped("This date stays fixed even when you make changes to the bucket.", evidence) != ""
    assert flips.flipped("This date can change when you edit the bucket's policy.", evidence) == ""


def test_skipping_an_action_negates_it():
    assert flips.flipped("The command skips building the package.",
                         ["The command always builds and installs the package."]) != ""
    assert flips.flipped("The command skips building the package.",
                         ["The command does not build the package."]) == ""
    # … but not what it is done for: "skip to step four to schedule an appointment" schedules one
    assert meaning._negated(next(t for t in meaning.parse("Skip to step four to schedule an appointment.")
                                 if t.lower_ == "schedule")) is False


def test_an_infinitive_under_avoid_says_what_for_not_what_is_avoided():
    claim = ("You can also avoid cycles in the profile data itself, e.g. with --separate-recs to tell recursion "
             "levels apart or --fn-skip to leave a dispatcher function out of the call graph.")
    evidence = ["A further possibility to avoid cycles in the profile data output is to simply leave out given functions in the call graph."]
    assert flips.flipped(claim, evidence) == ""
    leave = next(t for t in meaning.parse(claim) if t.lower_ == "leave")
    assert meaning._negated(leave) is False
    # what "avoid" takes, its -ing form, is still avoided
    assert meaning._negated(next(t for t in meaning.parse("Use --locked to avoid updating the lock file.")
                                 if t.lower_ == "updating")) is True


def test_a_means_clause_neither_agrees_nor_flips():
    claim = "Turn off your computer right away, so that the suspicious activity can't continue."
    said = "If you detect any unusual or suspicious activity on your computer, DO NOT turn off your computer."
    # "By turning off the computer, …" names the action for what it leads to: it does not back the claim
    window = said + " By turning off the computer, valuable evidence may be lost."
    assert "DO NOT turn off your computer" in flips.flipped(claim, [said, window])
    # … nor does a means clause flip a claim that negates the action
    assert flips.flipped("Do not pass --jobs to make.", ["You can speed up builds by passing --jobs to make."]) == ""


def test_a_bare_definite_subject_names_what_its_sentence_gave_it_before():
    evidence = ['Backward compatibility notes. * The "--preserve-merges" option of "git rebase" has been removed.']
    claim = ("Git 2.34 only deprecates the --preserve-merges option of git rebase in its backward compatibility "
             "notes, and the option keeps working.")
    assert "has been removed" in flips.flipped(claim, evidence)
    # a bare "the option" with no kind before it, or another option before it, is not that option
    assert flips.flipped("The option keeps working.", evidence) == ""
    assert flips.flipped("Git 2.34 deprecates the --rebase-merges option, and the option keeps working.", evidence) == ""


def test_rather_than_rejects_a_verb_behind_its_auxiliaries():
    doc = meaning.parse("Even in Git 2.37 it stays opt-in rather than being exposed to everyone by default.")
    exposed = next(t for t in doc if t.lower_ == "exposed")
    assert meaning._rejected(exposed) and meaning._negated(exposed) is True
    assert meaning._negated(next(t for t in meaning.parse("It is now exposed to everyone by default.") if t.lower_ == "exposed")) is False


def test_a_negation_under_an_adverb_root_is_read_and_ends():
    # spaCy makes a new Token at each access, so `head.head is not head` never held at the root:
    # a claim whose root is an adverb ("…, not anymore.") sent verification round it for ever
    claim, sentence = "Hardly ever, not anymore.", "Starlette supports it anymore."
    results: list = []
    worker = threading.Thread(daemon=True, target=lambda: results.append(
        (meaning.negation_scopes(claim), polarity._negation_differs(claim, sentence, [sentence]))))
    worker.start()
    worker.join(120)
    assert results == [([("Hardly ever anymore", frozenset({"anymore"}))], False)]
