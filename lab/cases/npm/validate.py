#!/usr/bin/env python3
"""Checks a case set (cases-npm.jsonl by default; lab/cases/node/validate.py runs it on cases-node.jsonl)
against the answer-check schema.

Usage: python3 validate.py [cases.jsonl] [corpus_dir]
Exits non-zero and lists every problem if any rule is broken.
"""
import html
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "cases-npm.jsonl"
CORPUS = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "corpus"

SPLIT = re.compile(r"(?<=\]\.)\s+")
CITE_END = re.compile(r"\[(\d+)\]\.$")
TYPES = ("number", "name", "negation", "unsupported")
PER_TYPE = 10
SETS = {"npm": ("np", 10), "node": ("nd", 12), "nodeapi": ("na", 12), "cmake": ("cm", 12), "pip": ("pp", 12),
        "valgrind": ("vg", 12), "gitnotes": ("gn", 12), "awscli": ("aw", 12), "cargo": ("cg", 12)}  # case set (from the file name) -> (id prefix, out-of-scope rows)
P, N_OOS = SETS[CASES.stem.removeprefix("cases-")]
MAX_CITE2_ROWS = 5
MIN_DOCS = 15
ID_RE = {"number": rf"{P}-num-\d{{2}}", "name": rf"{P}-name-\d{{2}}",
         "negation": rf"{P}-neg-\d{{2}}", "unsupported": rf"{P}-uns-\d{{2}}"}
IN_KEYS = {"id", "question", "faithful", "corrupted", "error_type",
           "bad_sentence", "good_sentence", "doc"}
VALUE_KEYS = {"true_value", "wrong_value"}
OOS_KEYS = {"id", "question", "out_of_scope"}
CORPUS_EXTS = (".md", ".rst", ".html", ".txt")
TAG = re.compile(r"<[^>]*>")


def doc_text(path):
    """The text the whole-token checks run against: the file as is, or for .html its visible text
    (tags removed, entities unescaped)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        text = html.unescape(TAG.sub("", text))
    return text


def token_in(value, text):
    return re.search(r"(?<![\w.])" + re.escape(value) + r"(?![\w])", text, re.I) is not None


def main():
    errors = []
    def err(cid, msg):
        errors.append(f"{cid}: {msg}")

    rows = []
    for n, line in enumerate(CASES.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            err(f"line {n}", "blank line")
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            err(f"line {n}", f"bad JSON: {e}")

    ids = Counter(r.get("id") for r in rows)
    for i, c in ids.items():
        if c > 1:
            err(i, f"duplicate id ({c}x)")
    qs = Counter((r.get("question") or "").strip().lower() for r in rows)
    for q, c in qs.items():
        if c > 1:
            err("?", f"duplicate question ({c}x): {q}")

    corpus_files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    if any(not f.endswith(CORPUS_EXTS) for f in corpus_files):
        err("corpus", "files other than .md/.rst/.html/.txt in corpus: "
            f"{sorted(f for f in corpus_files if not f.endswith(CORPUS_EXTS))}")

    per_type = Counter()
    docs = Counter()
    cite2_rows = 0
    n_oos = 0
    for r in rows:
        cid = r.get("id", "?")
        if not isinstance(r.get("question"), str) or not r["question"].strip():
            err(cid, "missing question")
        if r.get("out_of_scope"):
            n_oos += 1
            if set(r) != OOS_KEYS or r["out_of_scope"] is not True:
                err(cid, f"out-of-scope row must hold exactly {sorted(OOS_KEYS)} with true; has {sorted(r)}")
            if not re.fullmatch(rf"{P}-oos-\d{{2}}", cid):
                err(cid, "bad out-of-scope id")
            continue

        et = r.get("error_type")
        if et not in TYPES:
            err(cid, f"bad error_type {et!r}")
            continue
        per_type[et] += 1
        if not re.fullmatch(ID_RE[et], cid):
            err(cid, f"id does not match {ID_RE[et]}")
        want = IN_KEYS | (VALUE_KEYS if et in ("number", "name") else set())
        if set(r) != want:
            err(cid, f"keys {sorted(r)} != expected {sorted(want)}")
            continue

        doc = r["doc"]
        docs[doc] += 1
        if doc not in corpus_files:
            err(cid, f"doc not in corpus: {doc}")
            continue
        text = doc_text(CORPUS / doc)

        f_s = SPLIT.split(r["faithful"].strip())
        c_s = SPLIT.split(r["corrupted"].strip())
        if not 2 <= len(f_s) <= 4:
            err(cid, f"faithful has {len(f_s)} sentences (want 2-4)")
        if len(f_s) != len(c_s):
            err(cid, f"split lengths differ: {len(f_s)} vs {len(c_s)}")
            continue
        for s in f_s + c_s:
            if not s.endswith("]."):
                err(cid, f"sentence does not end with '].': {s!r}")
            elif not CITE_END.search(s):
                err(cid, f"sentence does not end with a [n]. marker: {s!r}")
        if " ".join(f_s) != r["faithful"] or " ".join(c_s) != r["corrupted"]:
            err(cid, "sentences not joined by single spaces")
        diff = [i for i, (a, b) in enumerate(zip(f_s, c_s, strict=False)) if a != b]
        if len(diff) != 1:
            err(cid, f"faithful/corrupted differ in {len(diff)} positions (want 1)")
            continue
        i = diff[0]
        if f_s[i] != r["good_sentence"]:
            err(cid, "good_sentence is not the differing faithful sentence")
        if c_s[i] != r["bad_sentence"]:
            err(cid, "bad_sentence is not the differing corrupted sentence")
        if r["corrupted"].count(r["bad_sentence"]) != 1:
            err(cid, "bad_sentence does not occur exactly once in corrupted")
        if r["faithful"].count(r["good_sentence"]) != 1:
            err(cid, "good_sentence does not occur exactly once in faithful")
        if not r["bad_sentence"].endswith("[1]."):
            err(cid, "bad_sentence must cite [1]")
        if not r["good_sentence"].endswith("[1]."):
            err(cid, "good_sentence must cite [1]")
        markers = [CITE_END.search(s).group(1) for s in f_s if CITE_END.search(s)]
        if any(m not in ("1", "2") for m in markers):
            err(cid, f"unexpected citation markers {markers}")
        if "2" in markers:
            cite2_rows += 1
        if "1" not in markers:
            err(cid, "no [1] sentence")

        if et in ("number", "name"):
            tv, wv = r["true_value"], r["wrong_value"]
            if not tv or not wv or tv.lower() == wv.lower():
                err(cid, "true_value/wrong_value empty or equal")
                continue
            if not token_in(tv, text):
                err(cid, f"true_value {tv!r} not a whole token in {doc}")
            if token_in(wv, text):
                err(cid, f"wrong_value {wv!r} occurs as a whole token in {doc}")
            if not token_in(tv, r["good_sentence"]):
                err(cid, f"true_value {tv!r} not in good_sentence")
            if token_in(tv, r["bad_sentence"]):
                err(cid, f"true_value {tv!r} still in bad_sentence")
            if not token_in(wv, r["bad_sentence"]):
                err(cid, f"wrong_value {wv!r} not in bad_sentence")
            if token_in(wv, r["good_sentence"]):
                err(cid, f"wrong_value {wv!r} in good_sentence")
            # the bad sentence is the good one with the value swapped
            if r["good_sentence"].replace(tv, wv) != r["bad_sentence"]:
                err(cid, "bad_sentence is not good_sentence with true_value -> wrong_value")

    for t in TYPES:
        if per_type[t] != PER_TYPE:
            err("counts", f"{t}: {per_type[t]} rows (want {PER_TYPE})")
    if n_oos != N_OOS:
        err("counts", f"out_of_scope: {n_oos} rows (want {N_OOS})")
    if len(docs) < MIN_DOCS:
        err("counts", f"only {len(docs)} docs used (want >= {MIN_DOCS})")
    if cite2_rows > MAX_CITE2_ROWS:
        err("counts", f"{cite2_rows} rows use [2] (max {MAX_CITE2_ROWS})")

    print(f"rows: {len(rows)}  in-scope: {sum(per_type.values())}  out-of-scope: {n_oos}")
    print("per type: " + ", ".join(f"{t}={per_type[t]}" for t in TYPES))
    print(f"docs used: {len(docs)} of {len(corpus_files)} corpus files; rows citing [2]: {cite2_rows}")
    if errors:
        print(f"FAIL: {len(errors)} problem(s)")
        for e in errors:
            print("  " + e)
        sys.exit(1)
    print("OK: all checks passed")


if __name__ == "__main__":
    main()
