"""Verification: swapped facts are caught, true paraphrases pass, and every method degrades safely."""

from __future__ import annotations

import json

import pytest

from adapters.render import footnote
from bot.app import build_verifier, stage_options
from lab.scoring import score_pairs
from pipeline import verify
from pipeline.claims import extract_claims
from pipeline.correct import correction_request
from pipeline.types import Claim, Evidence, Label
from pipeline.verify import align
from tests.fakes.openai_server import FakeOpenAI

KB = Evidence(
    "Albert Einstein was born in Ulm, in the Kingdom of Württemberg, on 14 March 1879. "
    "He developed the theory of relativity while working at the Swiss patent office in Bern.",
    title="Einstein", path="docs/einstein.md", origin="kb", chunk_id="c1",
)
POLAR = Evidence(
    "POLAR is an RFID localization system for crowded environments. "
    "It was presented at MobiCom 2021 by researchers from Tsinghua University.",
    title="POLAR", url="https://example.org/polar", origin="wikipedia",
)
EVIDENCE = [KB, POLAR]


def verify_claims(claims, evidence, settings, **kw):
    """`pipeline.verify.verify_claims` with the options and trained verifier `bot.app` builds from `settings`."""
    return verify.verify_claims(claims, evidence, options=stage_options(settings).verification,
                                verifier=build_verifier(settings), **kw)


def judge(text: str, settings, embedder, method: str = "default", **kw):
    claims = extract_claims(text, settings.list("entity_types"))
    assert len(claims) == 1, claims
    (verdict,) = verify_claims(claims, [EVIDENCE], method=method, embedder=embedder, settings=settings, **kw)
    return verdict


def test_swapped_year_is_contradicted_quoting_the_source(settings, embedder):
    verdict = judge("POLAR was introduced at MobiCom 2023 [1].", settings, embedder)
    assert verdict.label is Label.CONTRADICTED
    assert verdict.conflict == "2021"
    assert verdict.evidence == POLAR and "2021" in verdict.sentence
    assert verdict.confidence < settings.supported_threshold


@pytest.mark.parametrize(
    "text",
    [
        "Niels Bohr was born in Ulm in 1879.",  # person swapped
        "POLAR was presented at MobiCom 2021 by researchers from Stanford University.",  # organisation swapped
        "Albert Einstein was born in Munich in 1879.",  # place swapped
    ],
)
def test_swapped_person_or_organisation_is_not_supported(text, settings, embedder):
    assert judge(text, settings, embedder).label is not Label.SUPPORTED


@pytest.mark.parametrize(
    "text",
    [
        "Einstein came into the world in the city of Ulm in 1879.",
        "POLAR, shown at MobiCom 2021, localizes RFID tags in crowded places.",
    ],
)
def test_true_paraphrase_is_supported(text, settings, embedder):
    verdict = judge(text, settings, embedder)
    assert verdict.label is Label.SUPPORTED, verdict
    assert verdict.confidence >= settings.supported_threshold
    assert verdict.conflict == ""
    assert verdict.checked_against == ("kb", "wikipedia")


def test_no_claims_no_verdicts(settings, embedder):
    assert verify_claims([], [], method="default", embedder=embedder, settings=settings) == []


def test_claim_without_evidence_is_unsupported(settings, embedder):
    claims = extract_claims("Einstein was born in Ulm in 1879.", settings.list("entity_types"))
    (verdict,) = verify_claims(claims, [[]], method="default", embedder=embedder, settings=settings)
    assert verdict.label is Label.UNSUPPORTED and verdict.evidence is None and verdict.checked_against == ()


def test_the_aligned_sentence_s_entities_are_read_only_for_a_name_the_evidence_lacks(settings, embedder):
    from pipeline.verify import meaning

    meaning.sentence_entities.cache_clear()
    judge("POLAR was presented at MobiCom 2021 [1].", settings, embedder)  # every name is in the evidence
    assert meaning.sentence_entities.cache_info().misses == 0
    swapped = judge("POLAR was presented at MobiCom 2021 by researchers from Stanford University [1].", settings, embedder)
    assert meaning.sentence_entities.cache_info().misses == 1  # "Stanford University": its rival is looked for
    assert swapped.label is not Label.SUPPORTED and "Tsinghua University" in swapped.conflict


def test_mismatched_lengths_name_the_counts(settings, embedder):
    claims = extract_claims("Einstein was born in Ulm in 1879.", settings.list("entity_types"))
    with pytest.raises(ValueError, match="1 claims but 0 evidence"):
        verify_claims(claims, [], method="default", embedder=embedder, settings=settings)
    with pytest.raises(ValueError, match="unknown verify method 'magic'"):
        verify_claims(claims, [EVIDENCE], method="magic", embedder=embedder, settings=settings)


def test_cosine_is_the_published_baseline(settings, embedder):
    copy = score_pairs([KB.text], [[KB.text]], "cosine", embedder, settings)[0]
    assert copy.label is Label.SUPPORTED and copy.confidence == pytest.approx(1.0, abs=1e-4)
    unrelated = score_pairs(["Bananas are yellow fruit."], [[KB.text]], "cosine", embedder, settings)[0]
    assert unrelated.label is Label.UNSUPPORTED and unrelated.method == "cosine"
    # a number swap barely moves the cosine: the baseline cannot see it
    swapped = score_pairs([KB.text.replace("1879", "1880")], [[KB.text]], "cosine", embedder, settings)[0]
    assert swapped.label is Label.SUPPORTED


def test_shipped_combiner_loads_and_ranks_fixed_pairs(embedder):
    assert verify.COMBINER_PATH.stat().st_size < 1_000_000
    combiner = verify.load_combiner()
    assert combiner is not None
    manifest = combiner.spec["manifest"]
    assert manifest["seed"] == 0 and "perturbed" in manifest["data"]
    claims = [
        "Einstein was born in Ulm in 1879.",
        "Einstein was born in Ulm in 1905.",
        "The theory of relativity was developed by Einstein.",
        "Bananas are an excellent source of potassium.",
    ]
    aligned = verify.analyse(claims, [[KB.text]] * len(claims), embedder)
    p = combiner.predict(aligned)
    assert all(0.0 <= x <= 1.0 for x in p)
    assert p[0] > 0.5 and p[3] < 0.5
    assert p[0] > p[1] and p[0] > p[3] and p[2] > p[3]


def test_an_invented_name_is_read_against_the_sentence_the_claim_restates(embedder):
    claim = "TTS recommends Bitwarden, which is open source and runs on Windows, MacOS and Linux."
    passages = ["Protecting TTS Systems\nTTS offers a variety of tools for protecting sensitive information.",
                "Requirements for passwords\nWe recommend using KeePassXC (keepassxc.org) which is open source "
                "and runs on Windows, MacOS and Linux."]
    a = verify.analyse([claim], [passages], embedder, invented=[["Bitwarden"]], cited=[True])[0]
    assert (a.name, a.name_rival) == ("Bitwarden", "KeePassXC")  # not the link's site
    assert a.rival_at == ("We recommend using KeePassXC (keepassxc.org) which is open source and runs on Windows, "
                          "MacOS and Linux.", 1)


def test_llm_verdict_is_parsed_and_validated(settings, embedder):
    from pipeline.llm import OpenAIChat

    with FakeOpenAI() as server:
        llm = OpenAIChat(server.url, "fake-model", timeout=5, max_retries=0)
        server.reply(json.dumps({"label": "supported", "evidence_id": 1, "reason": "stated"}))
        verdict = judge("Einstein was born in Ulm in 1879.", settings, embedder, "llm", llm=llm)
        assert (verdict.label, verdict.method) == (Label.SUPPORTED, "llm")
        system, user = server.prompts()[-1]
        assert "Claim: Einstein was born in Ulm in 1879." in user and "[1] Albert Einstein" in user
        assert "JSON" in system
        # an invalid label, an evidence id that does not exist, and a down server: the default verdict stands
        server.reply(json.dumps({"label": "probably", "evidence_id": 1, "reason": ""}))
        assert judge("POLAR was introduced at MobiCom 2023.", settings, embedder, "llm", llm=llm).method == "default"
        server.reply(json.dumps({"label": "supported", "evidence_id": 99, "reason": ""}))
        verdict = judge("POLAR was introduced at MobiCom 2023.", settings, embedder, "llm", llm=llm)
        assert (verdict.method, verdict.label, verdict.conflict) == ("default", Label.CONTRADICTED, "2021")
    verdict = judge("POLAR was introduced at MobiCom 2023.", settings, embedder, "llm", llm=llm)
    assert (verdict.method, verdict.label) == ("default", Label.CONTRADICTED)


def test_nli_without_a_usable_model_says_why(settings, embedder, tmp_path):
    with pytest.raises(ValueError, match="needs settings.nli_model"):
        judge("Einstein was born in Ulm in 1879.", settings, embedder, "nli")
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(ValueError, match="does not exist"):
        judge("Einstein was born in Ulm in 1879.", settings.replace(nli_model=missing), embedder, "nli")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="could not be loaded as a CrossEncoder"):
        judge("Einstein was born in Ulm in 1879.", settings.replace(nli_model=str(tmp_path / "empty")), embedder, "nli")


def test_a_verbatim_quote_is_supported_but_a_negated_or_changed_one_is_not(embedder):
    from config.settings import load_settings

    settings = load_settings(env={})
    evidence = [["Backups of the index are kept for 30 days on the storage server."]]
    quote, negated, changed = score_pairs(
        ["Backups of the index are kept for 30 days on the storage server.",
         "Backups of the index are never kept for 30 days on the storage server.",
         "Backups of the index are kept for 90 days on the storage server."],
        evidence * 3, method="default", embedder=embedder, settings=settings)
    assert quote.label is Label.SUPPORTED and quote.confidence >= 0.9
    assert negated.label is Label.CONTRADICTED and negated.confidence < verify.RESTATEMENT_CONFIDENCE
    assert changed.label is Label.CONTRADICTED and changed.conflict == "30"


def test_a_part_of_an_evidence_sentence_is_a_restatement(settings, embedder):
    evidence = [["The POLAR system was introduced at MobiCom 2023 and is used for RFID localization in crowded places."]]
    part, swapped = score_pairs(
        ["The POLAR system was introduced at MobiCom 2023.", "The POLAR system was introduced at SenSys 2023."],
        evidence * 2, method="default", embedder=embedder, settings=settings)
    assert part.label is Label.SUPPORTED and part.confidence >= verify.RESTATEMENT_CONFIDENCE
    assert swapped.label is not Label.SUPPORTED  # "SenSys" is nowhere in the evidence: no restatement


@pytest.mark.parametrize("method", ["combiner", "default"])
def test_a_flipped_direction_or_negation_is_contradicted_quoting_the_source(method, settings, embedder):
    evidence = [["Aspirin reduces the risk of heart attacks in older adults."],
                ["Reindexing can be triggered at any time with the /ravbot reindex command."]]
    flipped, negated = score_pairs(
        ["Aspirin increases the risk of heart attacks in older adults.",
         "Reindexing cannot be triggered at any time with the /ravbot reindex command."],
        evidence, method=method, embedder=embedder, settings=settings)
    assert flipped.label is Label.CONTRADICTED and "reduces" in flipped.conflict.split()
    assert negated.label is Label.CONTRADICTED and negated.confidence <= verify.CONTRADICTED_CONFIDENCE


def test_a_number_the_evidence_nowhere_states_is_at_most_uncertain(settings, embedder):
    evidence = [["Einstein came into the world in Ulm, a city in the Kingdom of Württemberg."]]
    claim = ["Einstein was born in Ulm in 1879."]
    (capped,) = score_pairs(claim, evidence, method="default", embedder=embedder, settings=settings)
    assert capped.label is Label.UNCERTAIN and capped.confidence < settings.supported_threshold
    assert capped.conflict == ""  # absence is not a conflict: nothing to quote
    (lenient,) = score_pairs(claim, evidence, method="default", embedder=embedder,
                                    settings=settings.replace(numbers_must_appear=False))
    assert lenient.label is not Label.CONTRADICTED and lenient.confidence >= capped.confidence


def test_a_flag_names_what_the_sources_never_state(settings, embedder):
    text = "Einstein was born in Ulm in 1879."
    evidence = [Evidence(text="Einstein came into the world in Ulm, a city in the Kingdom of Württemberg.", title="Einstein")]
    (v,) = verify_claims([Claim(text, 0, len(text))], [evidence], method="default", embedder=embedder, settings=settings)
    assert (v.label, v.unstated, v.conflict) == (Label.UNCERTAIN, "1879", "")
    assert footnote(v).startswith('uncertain: the sources never state 1879 — "Einstein came into the world')
    assert f'- "{text}" (uncertain: the sources never state 1879)' in correction_request(text, [v])
    (ok,) = verify_claims([Claim("Einstein was born in Ulm.", 0, 25)], [evidence], method="default",
                                 embedder=embedder, settings=settings)
    assert ok.label is Label.SUPPORTED and ok.unstated == ""


def test_names_must_appear_caps_a_name_the_evidence_never_mentions(settings, embedder):
    evidence = [["Since 2015 the Paris Agreement has aimed to keep warming well below 2 °C."]] * 2
    claims = ["Since 2015 the Paris Agreement has aimed to keep warming well below 2 °C, the WMO said.",
              "Since 2015 the Paris Agreement has aimed to keep warming well below 2 °C."]
    strict = settings.replace(names_must_appear=True)
    attributed, plain = score_pairs(claims, evidence, method="default", embedder=embedder, settings=strict)
    assert (attributed.label, attributed.conflict, attributed.unstated) == (Label.UNCERTAIN, "", "WMO")
    assert plain.label is Label.SUPPORTED  # every name of it is in the evidence
    (added,) = score_pairs(claims[:1], evidence[:1], method="default", embedder=embedder, settings=settings, cited=True)
    assert (added.label, added.unstated) == (Label.UNCERTAIN, "the WMO said")  # an attribution the source lacks
    (uncited,) = score_pairs(claims[:1], evidence[:1], method="default", embedder=embedder, settings=settings)
    assert uncited.label is Label.SUPPORTED  # an uncited claim's evidence is a search: its silence says little
    lenient = settings.replace(details_must_appear=False)
    (plain_names,) = score_pairs(claims[:1], evidence[:1], method="default", embedder=embedder, settings=lenient,
                                 cited=True)
    assert plain_names.label is Label.SUPPORTED  # names_must_appear is off by default: an absent name alone does not flag


def test_a_formula_matches_its_wikipedia_rendering():
    passage = "The oceans release large quantities of CO 2 into the atmosphere."
    assert verify.name_present("CO2", passage.lower(), verify.content_words(passage), {})
    assert not verify.name_present("NO2", passage.lower(), verify.content_words(passage), {})


@pytest.mark.parametrize(
    ("claim", "evidence", "quoted"),
    [
        ("Two variants of chromosome 7q21 are associated with second cancers after radiotherapy.",
         "We identified two variants at chromosome 6q21 associated with second cancers after radiation therapy.", "6q21"),
        ("The drug acts by inhibiting receptor-interacting protein kinase 2 activity in epithelial cells.",
         "The drug acts by inhibiting receptor-interacting protein kinase 1 (RIPK1) activity in epithelial cells.", "1"),
        ("Type 2 diabetes is associated with variants in the interleukin 2 receptor gene.",  # "2" elsewhere is no match
         "Type 1 diabetes is associated with variants in the interleukin 2 receptor gene.", "1"),
        ("Without it the upload may fail once it reaches the default part limit of 1,000.",  # "limit of …" labels it
         "The option must be given, or the upload may fail when it reaches the default part limit of 10,000.", "10,000"),
    ],
)
def test_a_code_or_labelled_number_of_the_same_shape_is_a_conflict(claim, evidence, quoted, settings, embedder):
    (verdict,) = score_pairs([claim], [[evidence]], method="default", embedder=embedder, settings=settings)
    assert (verdict.label, verdict.conflict) == (Label.CONTRADICTED, quoted)


def test_code_and_label_rivals_known_values():
    from pipeline import numbers

    assert align._code_rival("H1N1 spread in 2009.", "The H5N1 and H1N1 strains.") == ""  # the claim's own code is there
    assert align._code_rival("COVID-19 vaccines work.", "SARS-CoV-2 infection.") == ""  # different shapes
    assert align._code_rival("CD8 cells respond.", "CD4 cells respond.") == "CD4"
    claim = "Patients with type 2 diabetes were enrolled."
    (value,) = numbers.extract_values(claim)
    assert align._label_before(claim, value) == "type"
    evidence = "Patients with type 1 diabetes and interleukin 2 were enrolled in 2019."
    assert [e.text for e in align._under_label(claim, value, evidence, numbers.extract_values(evidence))] == ["1"]
    assert align._under_label("In 2 patients it failed.", numbers.extract_values("In 2 patients it failed.")[0],
                               "In 5 patients it failed.", numbers.extract_values("In 5 patients it failed.")) == []


def test_a_value_the_passage_words_as_the_claim_does_is_no_conflict_with_the_sentence(settings, embedder):
    passage = ("Example 11: Uploading a small stream\n\nThe following command uploads a stream from standard input.\n\n"
               "Example 12: Uploading a local file stream that is larger than 50GB to S3\n\n"
               "The following command uploads a 51GB local file stream from standard input to a bucket. "
               "The size option must be provided, or the upload may fail.")
    quoted, changed = score_pairs(
        ["When you upload a stream from standard input that is larger than 50GB, you must provide the size option.",
         "When you upload a stream from standard input that is larger than 40GB, you must provide the size option."],
        [[passage]] * 2, method="default", embedder=embedder, settings=settings)
    assert "51GB" in quoted.sentence and quoted.label is Label.SUPPORTED  # "larger than 50GB" is stated, elsewhere
    assert changed.label is Label.CONTRADICTED
    from pipeline import numbers

    claim = "You can have up to 40 credit hours accrued."
    (forty,) = numbers.extract_values(claim)
    assert not align._quoted_elsewhere(claim, forty, "Comp time is limited to up to 40 credit hours.")  # "up to": no words of its own


def test_a_floor_stated_as_a_ceiling_is_contradicted_quoting_the_floor(settings, embedder):
    evidence = [["Pull requests with non-trivial changes must stay open for at least 48 hours before they land."]]
    same, flipped = score_pairs(
        ["Non-trivial pull requests must stay open for at least 48 hours before they land.",
         "Non-trivial pull requests must stay open for at most 48 hours before they land."],
        evidence * 2, method="default", embedder=embedder, settings=settings)
    assert same.label is Label.SUPPORTED
    assert flipped.label is Label.CONTRADICTED and flipped.conflict == "at least 48 hours"


@pytest.mark.parametrize(("named", "loss", "kept"), [
    (False, 0.1, False),  # a paraphrase: the claim without it is no farther from its evidence
    (True, 0.1, True),  # a name the passages never mention is a detail of its own
    (True, 0.3, False),  # … unless the rest of the claim is far closer to the evidence without it
])
def test_added_content_with_a_name_is_kept_unless_the_claim_is_far_closer_without_it(named, loss, kept, embedder):
    from pipeline.verify import align

    claim = "Changes to hot code paths call for a review by the @nodejs/performance team."
    extra = "a review by the @nodejs/performance team"
    reduced = " ".join(claim.replace(extra, " ").split())
    a = align.Alignment(claim=claim, sentence="Be careful when using primordials in hot code paths.", extra=extra,
                        extra_named=named, cited=True)
    a.v = embedder.encode([a.sentence])[0]
    a.features["cos_best"] = float(embedder.encode([reduced])[0] @ a.v) + loss  # dropping it loses `loss`
    align._keep_extras_that_matter([a], embedder)
    assert bool(a.extra) is kept


def test_a_release_a_section_heading_states_is_stated_and_a_heading_alone_aligns_with_nothing(settings, embedder):
    notes = [Evidence("* With the new http.curloptResolve configuration, the CURLOPT_RESOLVE mechanism is exposed "
                      "to the scripts. Git 2.34 users had no such setting.", section="Git v2.37 Release Notes",
                      chunk_id="n37"),
             Evidence("* A fix for git fsck's reports.", section="Git 2.36.1 Release Notes", chunk_id="n361")]
    claims = extract_claims("Git 2.37 added the http.curloptResolve configuration [1].", settings.list("entity_types"))
    (verdict,) = verify_claims(claims, [notes], method="default", embedder=embedder, settings=settings, cited=[True])
    assert verdict.label is Label.SUPPORTED, verdict  # "2.37" is its section's release, not a rival of "2.34"
    notes = [Evidence("This release merges up the fixes that appear in v2.30.8 and v2.38.4 to address two security "
                      "issues.", section="Git v2.39.2 Release Notes", chunk_id="n392"),
             Evidence("* A fix for git fsck's reports.", section="Git 2.37.1 Release Notes", chunk_id="n371")]
    claims = extract_claims("Git 2.39.2 is a security release that merges up fixes from v2.30.8 through v2.38.4 [1].",
                            settings.list("entity_types"))
    (verdict,) = verify_claims(claims, [notes], method="default", embedder=embedder, settings=settings, cited=[True])
    assert verdict.label is not Label.CONTRADICTED and verdict.sentence != "Git 2.37.1 Release Notes", verdict


def test_a_heading_states_a_value_only_as_written(settings, embedder):
    page = [Evidence("Currently version 8.0 (Windows Embedded Compact 2013) is supported out of the box.",
                     section="cmake-toolchains(7) > Cross Compiling for Windows CE", chunk_id="ce")]
    claims = extract_claims("Currently 7.0 (Windows Embedded Compact 2013) is supported out of the box [1].",
                            settings.list("entity_types"))
    (verdict,) = verify_claims(claims, [page], method="default", embedder=embedder, settings=settings, cited=[True])
    assert verdict.label is Label.CONTRADICTED and verdict.conflict == "8.0"  # the man page's "(7)" states no 7.0


def test_a_value_in_the_sections_heading_where_the_claims_stands_is_a_conflict(settings, embedder):
    page = [Evidence("* Send the pre-release announcement of the planned security release to the mailing list.",
                     section="Security release process > Announcement (one week in advance of the planned release)",
                     chunk_id="sec")]
    claims = extract_claims("The pre-release announcement goes out two weeks in advance of the planned release [1].",
                            settings.list("entity_types"))
    (verdict,) = verify_claims(claims, [page], method="default", embedder=embedder, settings=settings, cited=[True])
    assert verdict.label is Label.CONTRADICTED and verdict.conflict == "one week"
