"""lab.doc_pairs: verifier pairs mined from eval-check dumps of our own cases."""

from __future__ import annotations

import json

import pytest

from lab.doc_pairs import doc_pairs, main


def _claim(text: str, evidence: str, on_bad: bool = False) -> dict:
    return {"text": text, "label": "SUPPORTED", "confidence": 0.7, "evidence": evidence, "on_bad": on_bad}


ROWS = [
    {"id": "np-neg-08", "run": "faithful", "error_type": "negation", "out_of_scope": False, "idk": False,
     "claims": [_claim("It does not run in global mode.", "This file is not read in global mode."),
                _claim("It runs after install.", "")]},
    {"id": "np-neg-08", "run": "corrupted", "error_type": "negation", "out_of_scope": False, "idk": False,
     "claims": [_claim("It runs in global mode.", "This file is not read in global mode.", on_bad=True),
                _claim("It does not run in global mode.", "This file is not read in global mode.")]},
    {"id": "np-uns-01", "run": "corrupted", "error_type": "unsupported", "out_of_scope": False, "idk": False,
     "claims": [_claim("Red means update now, while green means latest.", "Red means update now.", on_bad=True)]},
    {"id": "np-oos-01", "run": "faithful", "error_type": "", "out_of_scope": True, "idk": True, "claims": []},
    {"id": "np-num-02", "run": "correction", "error_type": "number", "out_of_scope": False, "idk": False,
     "claims": [_claim("It defaults to 15.", "Default: 15")]},
]


def test_faithful_claims_support_and_the_planted_error_refutes_or_adds():
    pairs = doc_pairs(ROWS, "npm")
    assert [(p["claim"], p["label"], p["kind"]) for p in pairs] == [
        ("It does not run in global mode.", "supports", "doc-faithful"),
        ("It runs in global mode.", "refutes", "doc-negation"),
        ("Red means update now, while green means latest.", "nei", "doc-unsupported"),
    ]
    assert {p["source"] for p in pairs} == {"npm:np-neg-08", "npm:np-uns-01"}
    assert all(p["evidence"] and p["origin"] == "lab-cases" for p in pairs)


def test_the_cli_writes_pairs_and_refuses_the_answer_check_sets(tmp_path, capsys):
    (tmp_path / "npm.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "pairs.jsonl"
    main([str(tmp_path), str(out), "npm"])
    assert [json.loads(line)["label"] for line in out.read_text().splitlines()] == ["supports", "refutes", "nei"]
    assert "3 pairs" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="kept for measuring"):
        main([str(tmp_path), str(out), "npm", "handbook"])
    with pytest.raises(SystemExit, match="no dump"):
        main([str(tmp_path), str(out), "pip"])
