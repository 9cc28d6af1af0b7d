"""The decision rules of `pipeline.verify.rules`, driven by a table of plain inputs: no model is loaded.

Each row is an alignment (the signals `pipeline.verify.align` would compute), P(supported) and the
label, conflict and footnote reason the rules must give. The rows follow the rules' order, and a few
rows check which of two rules that both apply wins.
"""

from __future__ import annotations

import dataclasses

import pytest

from bot.app import stage_options
from config.settings import load_settings
from pipeline.types import Label
from pipeline.verify.align import Alignment
from pipeline.verify.model import settled
from pipeline.verify.rules import (
    CONTRADICTED_CONFIDENCE,
    RESTATEMENT_CONFIDENCE,
    VerifyOptions,
    decide,
    decide_one,
)

DEFAULTS = stage_options(load_settings(env={})).verification  # thresholds 0.5 / 0.2, numbers and details on, names off


def options(**changes) -> VerifyOptions:
    """The default verification options (as `bot.app` builds them), with `changes`."""
    return dataclasses.replace(DEFAULTS, **changes)


SENTENCE = "The client accepts a base_path option that is prepended to every request."
ABOUT = {"cos_best": 0.8, "coverage": 0.8}
EGG = "In all other circumstances, the `egg` fragment is not necessary and its use is discouraged."
REWORDED = "In all other circumstances it isn't necessary and its use is discouraged."


def aligned(**fields) -> Alignment:
    features = {**ABOUT, **fields.pop("features", {})}
    return Alignment(claim=fields.pop("claim", "a claim"), sentence=fields.pop("sentence", SENTENCE),
                     features=features, **fields)


TABLE = [
    # (case, alignment, P(supported), label, conflict, reason)
    ("no evidence sentence", aligned(sentence=""), 0.9, Label.UNSUPPORTED, "", "no evidence found"),
    ("no evidence, invented name", aligned(sentence="", invented="url_prefix"), 0.9, Label.UNSUPPORTED, "",
     "no document mentions url_prefix"),
    ("invented name, evidence has another in its place", aligned(invented="url_prefix", name="url_prefix",
     name_rival="base_path"), 0.9, Label.CONTRADICTED, "base_path", "source says base_path"),
    ("invented name, no rival", aligned(invented="url_prefix"), 0.9, Label.UNSUPPORTED, "",
     "no document mentions url_prefix"),
    ("invented name, rival in an unrelated sentence", aligned(invented="url_prefix", name="url_prefix",
     name_rival="base_path", features={"cos_best": 0.3}), 0.9, Label.UNSUPPORTED, "", "no document mentions url_prefix"),
    ("number conflict", aligned(conflict="600", conflict_kind="number"), 0.9, Label.CONTRADICTED, "600",
     "source says 600"),
    ("number conflict in an unrelated sentence", aligned(conflict="600", conflict_kind="number",
     features={"cos_best": 0.4}), 0.9, Label.SUPPORTED, "", ""),
    ("a known name, another in its place", aligned(name="Microsoft Teams", name_rival="Google Meet"), 0.9,
     Label.CONTRADICTED, "Google Meet", "source says Google Meet"),
    ("flipped predicate", aligned(flip="plugins are designed to not perform any I/O"), 0.9, Label.CONTRADICTED,
     "plugins are designed to not perform any I/O", "source says plugins are designed to not perform any I/O"),
    ("near-restatement with the direction flipped", aligned(
        claim="Aspirin increases the risk.", sentence="Aspirin reduces the risk.",
        features={"negation_mismatch": 0.0, "direction_mismatch": 1.0, "coverage": 0.9}), 0.9,
     Label.CONTRADICTED, "reduces", "source says reduces"),
    ("restatement beats a low probability", aligned(features={"cos_best": 0.9, "coverage": 1.0}), 0.1,
     Label.SUPPORTED, "", ""),
    ("a cited claim that words its sentence otherwise, every content word there",
     aligned(claim=REWORDED, sentence=EGG, features={"cos_best": 0.55, "coverage": 1.0}, cited=True), 0.3,
     Label.SUPPORTED, "", ""),
    ("the same, uncited (a search result is no source the answer restates)",
     aligned(claim=REWORDED, sentence=EGG, features={"cos_best": 0.55, "coverage": 1.0}), 0.3,
     Label.UNCERTAIN, "", "the sources only partly back this"),
    ("the same, with a word its sentence lacks ('forbidden')",
     aligned(claim=REWORDED.replace("discouraged", "forbidden"), sentence=EGG,
             features={"cos_best": 0.55, "coverage": 0.8}, cited=True), 0.3,
     Label.UNCERTAIN, "", "the sources only partly back this"),
    ("the same words, in a sentence too far from the claim",
     aligned(claim=REWORDED, sentence=EGG, features={"cos_best": 0.45, "coverage": 1.0}, cited=True), 0.3,
     Label.UNCERTAIN, "", "the sources only partly back this"),
    ("no restatement with a number the evidence never states ('$50' where it says '$75')",
     aligned(unconfirmed="50", features={"cos_best": 0.97, "coverage": 1.0}), 0.9, Label.UNCERTAIN, "",
     "the sources never state 50"),
    ("entity differs in a less similar sentence", aligned(conflict="Bonn", conflict_kind="entity",
     features={"cos_best": 0.6}), 0.9, Label.UNCERTAIN, "", "the sources only partly back this"),
    ("a cited claim with a negation the sentence lacks, where the claim says more than the sentence",
     aligned(claim="Sick leave is paid out, so there's nothing to reinstate.", sentence="Sick leave is reinstated.",
             features={"negation_mismatch": 1.0, "coverage": 0.75}, cited=True), 0.9, Label.UNCERTAIN, "",
     "the source says otherwise: Sick leave is reinstated."),
    ("the same, uncited (a search result's wording is not the answer's source)",
     aligned(claim="Sick leave is paid out, so there's nothing to reinstate.", sentence="Sick leave is reinstated.",
             features={"negation_mismatch": 1.0, "coverage": 0.75}), 0.9, Label.SUPPORTED, "", ""),
    ("a cited claim whose direction differs from the sentence's, saying more than it",
     aligned(claim="querystring is slower than URLSearchParams and not standard.",
             sentence="querystring is more performant than URLSearchParams.",
             features={"direction_mismatch": 1.0, "coverage": 0.75}, cited=True), 0.9, Label.UNCERTAIN, "",
     "the source says otherwise: querystring is more performant than URLSearchParams."),
    ("a negation mismatch with a sentence about something else", aligned(
        features={"negation_mismatch": 1.0, "coverage": 0.75, "cos_best": 0.6}), 0.9, Label.SUPPORTED, "", ""),
    ("a code example's names and values, in the answer's words", aligned(code_backed=True), 0.1,
     Label.SUPPORTED, "", ""),
    ("a code example's values, and a number it reads elsewhere", aligned(code_backed=True, unconfirmed="5"), 0.1,
     Label.SUPPORTED, "", ""),
    ("a code example's names and values, with content added", aligned(code_backed=True, extra="the old batch size"),
     0.9, Label.UNCERTAIN, "", "the documents don't say the old batch size"),
    ("a number no evidence states", aligned(unconfirmed="1879"), 0.9, Label.UNCERTAIN, "",
     "the sources never state 1879"),
    ("added content", aligned(extra="billed to your current project"), 0.9, Label.UNCERTAIN, "",
     "the documents don't say billed to your current project"),
    ("added content, unlikely anyway", aligned(extra="two weeks"), 0.1, Label.UNSUPPORTED, "",
     "the documents don't say two weeks"),
    ("plain support", aligned(), 0.7, Label.SUPPORTED, "", ""),
    ("partial support", aligned(), 0.3, Label.UNCERTAIN, "", "the sources only partly back this"),
    ("no support", aligned(), 0.1, Label.UNSUPPORTED, "", "the sources only partly back this"),
    # order: a conflicting number wins over a flip and over added content
    ("number conflict before flip", aligned(conflict="600", conflict_kind="number", flip="is not paid",
     extra="two weeks"), 0.9, Label.CONTRADICTED, "600", "source says 600"),
    ("flip before a code example", aligned(flip="is not paid", code_backed=True), 0.9, Label.CONTRADICTED,
     "is not paid", "source says is not paid"),
    ("flip before restatement", aligned(flip="is not paid", features={"cos_best": 0.95, "coverage": 1.0}), 0.9,
     Label.CONTRADICTED, "is not paid", "source says is not paid"),
]


@pytest.mark.parametrize(("case", "alignment", "p", "label", "conflict", "reason"), TABLE, ids=[row[0] for row in TABLE])
def test_rules_table(case, alignment, p, label, conflict, reason):
    verdict = decide_one(alignment, p, options())
    assert (verdict.label, verdict.conflict, verdict.reason) == (label, conflict, reason)
    if label is Label.CONTRADICTED:
        assert verdict.confidence <= CONTRADICTED_CONFIDENCE
    if label is Label.SUPPORTED and reason == "" and alignment.features.get("coverage") == 1.0:
        assert verdict.confidence >= RESTATEMENT_CONFIDENCE


def test_settings_switch_rules_off():
    added = aligned(extra="two weeks")
    assert decide_one(added, 0.9, options(details_must_appear=False)).label is Label.SUPPORTED
    unstated = aligned(unconfirmed="1879")
    assert decide_one(unstated, 0.9, options(numbers_must_appear=False)).label is Label.SUPPORTED
    named = aligned(unnamed="WMO", features={"salient_absent": 1.0})
    assert decide_one(named, 0.9, options()).label is Label.SUPPORTED
    assert decide_one(named, 0.9, options(names_must_appear=True)).label is Label.UNCERTAIN


def test_a_name_in_place_is_quoted_from_the_sentence_that_has_it():
    rival = "We recommend using KeePassXC which is open source and runs on Windows and Linux."
    for invented in ("Bitwarden", ""):  # rule 2 (a name no document mentions) and rule 5
        verdict = decide_one(aligned(invented=invented, name="Bitwarden", name_rival="KeePassXC",
                                     rival_at=(rival, 3), evidence_index=0), 0.9, options())
        assert (verdict.label, verdict.conflict, verdict.sentence, verdict.evidence_index) == (
            Label.CONTRADICTED, "KeePassXC", rival, 3)
    assert decide_one(aligned(name="Bitwarden", name_rival="KeePassXC"), 0.9, options()).sentence == SENTENCE


def test_decide_keeps_the_order_of_its_inputs():
    rows = [aligned(), aligned(unconfirmed="7"), aligned(sentence="")]
    assert [v.label for v in decide(rows, [0.9, 0.9, 0.9], options())] == [
        Label.SUPPORTED, Label.UNCERTAIN, Label.UNSUPPORTED]


@pytest.mark.parametrize(("case", "alignment", "p", "label", "conflict", "reason"), TABLE, ids=[row[0] for row in TABLE])
def test_a_claim_is_settled_when_no_probability_changes_its_label(case, alignment, p, label, conflict, reason):
    """`settled` (the verifier model is not run) holds exactly when every P in [0, 1] gives the same
    label and that label is not UNSUPPORTED, which the model's P(refutes) may turn into CONTRADICTED."""
    labels = {decide_one(alignment, q / 20, options()).label for q in range(21)}
    assert settled(alignment, options()) == (len(labels) == 1 and Label.UNSUPPORTED not in labels)


def test_restatements_and_contradictions_are_settled_partial_support_is_not():
    assert settled(aligned(features={"cos_best": 0.9, "coverage": 1.0}), options())  # a quote
    assert settled(aligned(conflict="600", conflict_kind="number"), options())
    assert not settled(aligned(), options())  # the model's reading decides
    assert not settled(aligned(unconfirmed="1879"), options())  # UNCERTAIN or UNSUPPORTED, by P
    assert not settled(aligned(invented="url_prefix"), options())  # UNSUPPORTED: the model may find it refuted
