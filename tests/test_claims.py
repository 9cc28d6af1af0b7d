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
    assert [c.text for c in claims] == ["Einstein was born in Ulm in 1879.", "The model reaches 93% accuracy."]
    assert text[claims[0].start:claims[0].end] == "Einstein was born in Ulm in 1879 [1]."
    assert text[claims[1].start:claims[1].end] == "The model reaches 93% accuracy [2, 3]."
    assert ("Ulm", "GPE") in claims[0].entities


def test_citation_after_the_full_stop_is_included():
    text = "Paris is the capital of France. [4]\nIt is large."
    (claim,) = extract_claims(text, TYPES)
    assert text[claim.start:claim.end] == "Paris is the capital of France. [4]"


def test_list_items_are_separate_claims_without_their_bullets():
    text = "Facts:\n- Berlin became the capital in 1990 [1]\n- Bonn was the capital before [2]"
    claims = extract_claims(text, TYPES)
    assert [c.text for c in claims] == ["Berlin became the capital in 1990", "Bonn was the capital before"]
    assert text[claims[0].start:claims[0].start + 6] == "Berlin"


@pytest.mark.parametrize("answer", [IDK, "", "   ", "Yes, that is right.", "It depends on what you need."])
def test_answers_without_claims(answer):
    assert extract_claims(answer, TYPES) == []


def test_entity_types_are_configurable():
    text = "Marie Curie worked in Paris."
    assert extract_claims(text, ["PERSON"])[0].entities == (("Marie Curie", "PERSON"),)
    assert extract_claims(text, "GPE")[0].entities == (("Paris", "GPE"),)


def test_strip_citations():
    assert strip_citations("It started in 2023 [1]. See also [2, 3] and [4-6].") == "It started in 2023. See also and."
    assert strip_citations("an array a[i] stays") == "an array a[i] stays"
