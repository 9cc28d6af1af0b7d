"""`ravbot eval check`: a tiny corpus and cases of the answer-check shape, run end to end through the
real pipeline with the scripted LLM behind the real `openai` client; and the extractive checks."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from lab import check
from lab.cli import eval_group
from lab.scripted_llm import ScriptedLLM
from pipeline.llm import LLMError, OpenAIChat
from pipeline.types import IDK

DOCS = {
    "backups.md": (
        "# Backups\n\n"
        "Kestrel takes a snapshot of every project database every 6 hours.\n"
        "Snapshots are kept for 14 days and then deleted automatically.\n\n"
        "Restoring a snapshot needs the `kestrel restore` command and an administrator token.\n"
    ),
    "guides/deploys.md": (
        "# Deploys\n\n"
        "Deploys run through the Heron pipeline, which builds the container image first.\n"
        "A deploy is blocked when any test fails.\n\n"
        "The staging environment is refreshed from production every Monday.\n"
    ),
    "SOURCE.txt": "Licence text of the corpus: never indexed.\n",
}

NUMBER = {
    "id": "t-num-01", "question": "How long does Kestrel keep database snapshots?", "error_type": "number",
    "faithful": "Kestrel keeps database snapshots for 14 days and then deletes them automatically [1]. "
                "It takes a snapshot of every project database every 6 hours [1].",
    "corrupted": "Kestrel keeps database snapshots for 45 days and then deletes them automatically [1]. "
                 "It takes a snapshot of every project database every 6 hours [1].",
    "bad_sentence": "Kestrel keeps database snapshots for 45 days and then deletes them automatically [1].",
    "good_sentence": "Kestrel keeps database snapshots for 14 days and then deletes them automatically [1].",
    "doc": "backups.md", "true_value": "14", "wrong_value": "45",
}
NAME = {
    "id": "t-nam-01", "question": "Which pipeline do Kestrel deploys run through?", "error_type": "name",
    "faithful": "Deploys run through the Heron pipeline, which builds the container image first [1]. "
                "A deploy is blocked when any test fails [1].",
    "corrupted": "Deploys run through the Osprey pipeline, which builds the container image first [1]. "
                 "A deploy is blocked when any test fails [1].",
    "bad_sentence": "Deploys run through the Osprey pipeline, which builds the container image first [1].",
    "good_sentence": "Deploys run through the Heron pipeline, which builds the container image first [1].",
    "doc": "guides/deploys.md", "true_value": "Heron", "wrong_value": "Osprey",
}
OUT = {"id": "t-oos-01", "question": "What is the boiling point of liquid nitrogen in kelvin?", "out_of_scope": True}
CASES = [NUMBER, NAME, OUT]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("check-corpus")
    for rel, text in DOCS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cases = root.parent / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    return root, cases


@pytest.fixture(scope="module")
def checked(corpus, tmp_path_factory, embedder):
    """One CLI run (--json --dump) with the `default` verifier, shared by the tests below."""
    from config.settings import load_settings

    root, cases = corpus
    dump = tmp_path_factory.mktemp("check-out") / "dump.jsonl"
    settings = load_settings(env={}, data_dir=str(tmp_path_factory.mktemp("unused-data")))
    result = CliRunner().invoke(eval_group, ["check", "--cases", str(cases), "--corpus", str(root), "--methods", "default",
                                             "--json", "--dump", str(dump)], obj={"settings": settings},
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), [json.loads(line) for line in dump.read_text().splitlines()]


def test_cli_reports_every_figure_per_type(checked):
    summary, _ = checked
    assert (summary["cases"], summary["in_scope"], summary["out_of_scope"]) == (3, 2, 1)
    m = summary["methods"]["default"]
    assert set(m["by_type"]) == {"number", "name"}
    for key in ("bad_flagged", "bad_contradicted", "bad_never_checked", "clean_catches", "true_value_in_conflict",
                "correction_success", "in_scope_refused", "faithful_answers_flagged"):
        assert m["overall"][key]["n"] == 2, key
    assert m["overall"]["faithful_claims_flagged"]["n"] >= 2  # at least one claim per sentence of interest
    assert m["overall"]["in_scope_refused"]["k"] == 0
    assert m["seconds_per_question_p50"] > 0 and m["verify_ms_per_claim_p50"] > 0
    # the scripted LLM saw one draft request per question per pass that asked it, and every correction
    _, records = checked
    assert summary["llm_requests"].get("draft", 0) == sum(r["llm_drafts"] for r in records)
    assert summary["llm_requests"].get("correction", 0) == sum(r["llm_corrections"] for r in records) >= 1


def test_wrong_number_is_flagged_with_the_true_value(checked):
    summary, records = checked
    number = summary["methods"]["default"]["by_type"]["number"]
    assert number["bad_flagged"]["k"] == 1 and number["bad_never_checked"]["k"] == 0
    assert number["true_value_in_footnote"]["k"] == 1
    corrupted = next(r for r in records if r["id"] == "t-num-01" and r["run"] == "corrupted")
    bad = [c for c in corrupted["claims"] if c["on_bad"]]
    assert bad and bad[0]["label"] != "SUPPORTED" and "45" in bad[0]["text"] and bad[0]["sentence"] == 0
    assert "14" in bad[0]["footnote"]
    # the claims of the second sentence belong to it, and the faithful twin is measured in its own run
    assert all(c["sentence"] == 1 for c in corrupted["claims"] if not c["on_bad"])
    faithful = next(r for r in records if r["id"] == "t-num-01" and r["run"] == "faithful")
    assert faithful["target_checked"] and faithful["claims"][0]["text"].startswith("Kestrel keeps database snapshots for 14")


def test_detection_passes_do_not_correct_and_the_correction_pass_does(checked):
    _, records = checked
    first = [r for r in records if r["run"] in ("faithful", "corrupted")]
    assert first and all(r["llm_corrections"] == 0 for r in first)
    assert all(r["llm_drafts"] == 1 for r in first if not r["out_of_scope"])
    fixed = next(r for r in records if r["id"] == "t-num-01" and r["run"] == "correction")
    assert fixed["llm_corrections"] == 1  # the flagged draft was sent back once ...
    assert "14 days" in fixed["answer"] and "45" not in fixed["answer"]  # ... and the scripted LLM sent `faithful`
    assert fixed["corrected"] is all(c["label"] == "SUPPORTED" for c in fixed["claims"])
    # a draft with nothing to correct is not asked again: it keeps its wrong sentence
    for r in records:
        if r["run"] == "correction" and r.get("asked") is False:
            assert not r["corrected"] and all(c["label"] == "SUPPORTED" for c in r["claims"])


def test_out_of_scope_question_is_counted(checked):
    summary, records = checked
    m = summary["methods"]["default"]
    (oos,) = [r for r in records if r["out_of_scope"]]
    assert oos["idk"] and oos["answer"] == IDK and oos["run"] == "faithful"
    assert m["out_of_scope_refused"] == {"k": 1, "n": 1, "share": 1.0}
    assert m["out_of_scope_refused_before_llm"]["k"] == (1 if oos["llm_drafts"] == 0 else 0)


def test_table_output(corpus, settings):
    summary = {"corpus": "x", "in_scope": 2, "out_of_scope": 1, "methods": {"default": {
        "by_type": {"number": {"cases": 1, "bad_flagged": {"k": 1, "n": 1, "share": 1.0}}},
        "overall": {"cases": 2, "bad_flagged": {"k": 1, "n": 2, "share": 0.5}, "in_scope_refused": {"k": 0, "n": 2, "share": 0.0}},
        "out_of_scope_refused_before_llm": {"k": 0, "n": 1, "share": 0.0}, "out_of_scope_refused": {"k": 1, "n": 1, "share": 1.0},
        "seconds_per_question_p50": 1.5, "verify_ms_per_claim_p50": 40.0, "claims_per_answer_mean": 2.0}}}
    from lab.cli import check_table

    text = check_table(summary)
    assert "number default" in text and "1/2 50%" in text and "overall default" in text


def test_scripted_llm_through_the_openai_client():
    with ScriptedLLM(CASES) as server:
        llm = OpenAIChat(server.url, "scripted", max_retries=0)
        prompt = f"<documents>…</documents>\n\nQuestion (answer it using only the documents above):\n{NUMBER['question']}"
        assert llm.complete("system", prompt) == NUMBER["faithful"]
        server.set_mode("corrupted")
        assert llm.complete("system", prompt) == NUMBER["corrupted"]
        assert llm.complete("system", prompt + "\n\nHere is your previous answer:\n<answer>…") == NUMBER["faithful"]
        assert llm.complete("system", f"Question:\n{OUT['question']}") == IDK
        assert llm.complete("system", "a question nobody wrote") == IDK
        with pytest.raises(LLMError, match="JSON-mode"):
            llm.complete("system", prompt, json_mode=True)
        llm.close()
        assert server.count("t-num-01") == 3 and server.count("t-num-01", "correction") == 1
        assert server.kinds() == {"draft": 3, "correction": 1, "unmatched": 1, "json": 1}


def test_sentences_assignment_and_values():
    sentences = check.split_sentences(NUMBER["corrupted"])
    assert sentences == [NUMBER["bad_sentence"], NUMBER["corrupted"].split("[1]. ")[1]]
    assert check.bad_index(NUMBER) == 0
    claims = ["It takes a snapshot of every project database every 6 hours.", "Kestrel keeps database snapshots",
              "Nothing here matches."]
    assert check.assign(claims, sentences) == [1, 0, None]
    assert check.quotes_value("source says 14 days", "14") and not check.quotes_value("v1.14 or 140", "14")
    assert check.quotes_value("use HERON now", "Heron")
    assert check.holds_sentence("Kestrel keeps database snapshots for 45 days and then deletes them automatically[1]. More.",
                                NUMBER["bad_sentence"])
    assert not check.holds_sentence(NUMBER["faithful"], NUMBER["bad_sentence"])


def test_load_cases_names_the_problem(tmp_path):
    bad = dict(NUMBER, bad_sentence="A sentence that is not in the answer [1].")
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"cases.jsonl:1 \('t-num-01'\): bad_sentence"):
        check.load_cases(path)
    path.write_text(json.dumps(dict(NUMBER, error_type="typo")) + "\n")
    with pytest.raises(ValueError, match="error_type 'typo'"):
        check.load_cases(path)
    path.write_text("".join(json.dumps(c) + "\n" for c in [*CASES, dict(NAME, id="t-nam-02")] * 1))
    assert [c["id"] for c in check.limit_cases(check.load_cases(path), 1)] == ["t-num-01", "t-nam-01", "t-oos-01"]


def test_extractive_text_checks():
    answer = ("As noted above, there is a 240 hour limit on carry-over. [1] on the number of hours you can carry over. [1] "
              "See [the leave page](https://example.gov/leave) in {% slack_channel \"admins\" %}. [2]")
    units = check.answer_units(answer)
    assert units[0] == "As noted above, there is a 240 hour limit on carry-over."
    assert [check.is_fragment(u) for u in units] == [False, True, False]
    assert check.extractive_flags(answer) == {"fragment": True, "duplicate": False, "template": True, "markdown_link": True}
    cut = ("There is a 240 hour limit on the number of hours you can carry over to the next year. [1] "
           "on the number of hours you can carry over to the next year. [1]")
    assert check.extractive_flags(cut)["duplicate"] and check.extractive_flags(cut)["fragment"]
    assert check.has_duplicate(["The limit is 240 hours per leave year for most staff.",
                                "The limit is 240 hours per leave year for most staff!"])
    assert not check.has_duplicate(["The limit is 240 hours.", "Sick leave has no limit."])
    assert not check.is_fragment('He said "stop."') and check.is_fragment("`code` ends without a stop")
    # Markdown decoration is not what makes a fragment; a table row without a full stop is one
    assert not check.is_fragment("**Encrypt all media** before use, with `max_age` set.")
    assert not check.is_fragment("> [The handbook](https://example.gov/x) explains it.")
    assert check.is_fragment("| Non-billable time (not to exceed) | 10% |")


def test_links_are_converted_where_answers_are_posted():
    from pipeline.types import Answer, Source

    answer = Answer(question="q", text="See [the leave page](https://example.gov/leave) for details. [1]",
                    sources=(Source(id=1, title="Leave", url="https://example.gov/leave", path="leave.md"),))
    assert check.extractive_flags(answer.text)["markdown_link"]  # the answer's own text keeps Markdown
    assert not check.posted_markdown_link(answer)  # Slack and the terminal show it in their own syntax


def test_extractive_run(corpus, embedder):
    root, cases = corpus
    seen = []
    summary = check.run_extractive(check.load_cases(cases), root, progress=seen.append)
    assert (summary["in_scope"], summary["out_of_scope"]) == (2, 1)
    assert summary["value_found"]["n"] == summary["value_retrieved"]["n"] == 2
    # an extractive answer quotes its chunks: a value it holds was in them
    assert summary["value_retrieved"]["k"] >= summary["value_found"]["k"]
    assert summary["fragment"]["n"] == 2 and summary["seconds_p50"] > 0
    assert any("copied 2 documents" in line for line in seen)  # SOURCE.txt is left out


def test_a_work_dir_keeps_the_index_for_the_next_run(corpus, embedder, tmp_path):
    root, cases = corpus
    work = tmp_path / "work"
    runs = []
    for _ in range(2):
        seen: list[str] = []
        summary = check.run_extractive(check.load_cases(cases), root, progress=seen.append, work_dir=work)
        runs.append((summary, seen))
    (first, seen1), (second, seen2) = runs
    indexed = [[line for line in seen if line.startswith("indexed ")] for seen in (seen1, seen2)]
    assert "2 documents" in indexed[0][0] and "0 documents" in indexed[1][0]  # the second run embedded nothing
    assert first["value_found"] == second["value_found"] and first["in_scope_refused"] == second["in_scope_refused"]
    # one folder per corpus, named after it; another corpus of the same name gets its own
    assert [p.name.rsplit("-", 1)[0] for p in work.iterdir()] == [check.source_name(root)]
    with check.corpus_work(tmp_path / "elsewhere" / root.name, work) as other:
        assert other.parent == work
    assert len(list(work.iterdir())) == 2
