"""Claim extraction: checkable sentences with exact offsets into the answer, citations stripped."""

from __future__ import annotations

import pytest

from pipeline.claims import extract_claims, strip_citations
from pipeline.types import IDK

TYPES = "PERSON,ORG,GPE,LOC,DATE,EVENT,NORP,FAC,PRODUCT,WORK_OF_ART,LAW,TIME,PERCENT,MONEY,QUANTITY,CARDINAL,ORDINAL".split(",")
POLAR = (
    "The POLAR system was introduced at MobiCom 2023 and is primarily used for fine-grained "
    "RFID localization in crowded environments."
)


def test_polar_sentence_is_one_claim_with_its_date():
    claims = extract_claims(POLAR, TYPES)
    assert len(claims) == 1
    claim = claims[0]
    assert (claim.start, claim.end) == (0, len(POLAR))
    assert claim.text == POLAR
    assert ("2023", "DATE") in claim.entities


def test_offsets_point_into_the_original_and_end_after_the_citation():
    text = "Einstein was born in Ulm in 1879 [1]. He liked music. The model reaches 93% accuracy [2, 3]."
    claims = extract_claims(text, TYPES)
    assert [c.text for c in claims] == ["Einstein was born in Ulm in 1879.", "He liked music.", "The model reaches 93% accuracy."]
    assert text[claims[0].start:claims[0].end] == "Einstein was born in Ulm in 1879 [1]."
    assert text[claims[2].start:claims[2].end] == "The model reaches 93% accuracy [2, 3]."
    assert ("Ulm", "GPE") in claims[0].entities


def test_citation_after_the_full_stop_is_included():
    text = "Paris is the capital of France. [4]\nIt is large."
    (claim,) = extract_claims(text, TYPES)
    assert text[claim.start:claim.end] == "Paris is the capital of France. [4]"


def test_a_cited_lead_in_ends_its_sentence():
    answer = ("Routes can also specify which HTTP methods are handled by an endpoint: [1] By default function "
              "endpoints will only accept `GET` requests, unless specified. [1]")
    lead, rule = extract_claims(answer, TYPES)
    assert lead.text == "Routes can also specify which HTTP methods are handled by an endpoint:"
    assert answer[lead.start:lead.end].endswith("endpoint: [1]") and answer[rule.start:].startswith("By default")
    assert rule.text == "By default function endpoints will only accept `GET` requests, unless specified."
    # a colon and a capital without a citation between them do not end a sentence
    assert [c.text for c in extract_claims("Note: This stays one sentence [1].", TYPES)] == ["Note: This stays one sentence."]


def test_list_items_are_separate_claims_without_their_bullets():
    text = "Facts:\n- Berlin became the capital in 1990 [1]\n- Bonn was the capital before [2]"
    claims = extract_claims(text, TYPES)
    assert [c.text for c in claims] == ["Berlin became the capital in 1990", "Bonn was the capital before"]
    assert text[claims[0].start:claims[0].start + 6] == "Berlin"


@pytest.mark.parametrize("answer", [
    IDK, "", "   ", "Yes, that is right.", "Does the client retry failed requests?", "Hope this helps!",
    "Thanks for asking, happy to help with the setup.", "Sources: [1] Reindexing, [2] Settings",
    "I couldn't find anything about parking permits in the documents.",
])
def test_answers_without_claims(answer):
    assert extract_claims(answer, TYPES) == []


def test_every_statement_is_a_claim_named_or_not():
    text = ("The client accepts a url_prefix option that is prepended to every request [1]. "
            "Plugins are designed to not perform any I/O [2]. Is that clear? Hope this helps!")
    assert [c.text for c in extract_claims(text, TYPES)] == [
        "The client accepts a url_prefix option that is prepended to every request.",
        "Plugins are designed to not perform any I/O.",
    ]


@pytest.mark.parametrize(("text", "sentences"), [
    ("The equivalent of requests.Session here is mylib.Client [1]. It pools connections [1].",
     ["The equivalent of requests.Session here is mylib.Client.", "It pools connections."]),
    ("Secrets are read from a .env file and the .netrc file [1].",
     ["Secrets are read from a .env file and the .netrc file."]),
    ("Install version 2.31.0 from pypi.org, e.g. with pip, and restart the worker [2].",
     ["Install version 2.31.0 from pypi.org, e.g. with pip, and restart the worker."]),
    ("See https://example.com/docs/setup.html for the steps. Then run config.yaml through the linter.",
     ["See https://example.com/docs/setup.html for the steps.", "Then run config.yaml through the linter."]),
    # a signature's elided arguments end no sentence; an ellipsis outside brackets still may
    ("With the add_test(NAME ... COMMAND ...) signature, the target's path is used [1]. The build waits for the "
     "lock... Then the server stops the worker process.",
     ["With the add_test(NAME ... COMMAND ...) signature, the target's path is used.",
      "The build waits for the lock...", "Then the server stops the worker process."]),
])
def test_splitting_respects_identifiers_files_versions_urls_and_abbreviations(text, sentences):
    claims = extract_claims(text, TYPES)
    assert [c.text for c in claims] == sentences
    assert all(text[c.start:c.end].startswith(c.text[:10]) for c in claims)


def test_a_cited_full_stop_ends_a_sentence_before_a_lower_case_code_name():
    text = ("lockfileVersion 3 is used by npm v9 and above [1]. npm will still read older lockfiles [1]. "
            "package-lock.json is meant to be committed [2].")
    claims = extract_claims(text, TYPES)
    assert [c.text for c in claims] == ["lockfileVersion 3 is used by npm v9 and above.",
                                        "npm will still read older lockfiles.", "package-lock.json is meant to be committed."]
    assert [text[c.start:c.end] for c in claims][1] == "npm will still read older lockfiles [1]."
    # without a citation, a lower-case word after a full stop goes on as before: one sentence
    assert len(extract_claims("It runs on v9. npm reads it.", TYPES)) == 1


@pytest.mark.parametrize("answer", ["It defaults to 15 [1].", "The limit is 240 hours [1].", "It was released in 2019."])
def test_a_short_sentence_with_a_value_is_a_claim(answer):
    assert len(extract_claims(answer, TYPES)) == 1


def test_entity_types_are_configurable():
    text = "Marie Curie worked in Paris."
    assert extract_claims(text, ["PERSON"])[0].entities == (("Marie Curie", "PERSON"),)
    assert extract_claims(text, "GPE")[0].entities == (("Paris", "GPE"),)


def test_strip_citations():
    assert strip_citations("It started in 2023 [1]. See also [2, 3] and [4-6].") == "It started in 2023. See also and."
    assert strip_citations("an array a[i] stays") == "an array a[i] stays"
