"""Verifier training pairs mined from `ravbot eval check --dump` files of our own cases (`lab/cases`):
each claim of a faithful answer with the evidence it was checked against → supports; the claim that
carries the planted error → refutes (a number, name or negation) or nei (an invented detail), with
the evidence the verifier read when it checked it: hard negatives in the register of real answers.

    python -m lab.doc_pairs DUMP_DIR OUT.jsonl awscli cargo cmake     # one DUMP_DIR/<set>.jsonl per set
    python -m lab.train_verifier --init pipeline/models/verifier --authored --authored-pairs OUT.jsonl ...

The rows have `lab.paraphrase_pairs.AuthoredPair`'s fields; `source` is "<set>:<case id>", so a
case's faithful and wrong answers fall in the same split. Never run it on `../shared/answer-check`
dumps: those cases are kept for measuring (it refuses them).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

MAX_EVIDENCE = 1200  # characters: longer evidence is a whole passage, not what the model reads


def doc_pairs(rows: Iterable[dict], set_name: str) -> list[dict]:
    """The pairs of one set's dump rows (each once); out-of-scope, refused and correction runs give none."""
    out: list[dict] = []
    seen: set[tuple[str, str, str]] = set()
    for row in rows:
        if row.get("out_of_scope") or row.get("idk") or row.get("run") not in ("faithful", "corrupted"):
            continue
        for claim in row.get("claims", []):
            evidence = (claim.get("evidence") or "").strip()
            if not evidence or len(evidence) > MAX_EVIDENCE:
                continue
            if row["run"] == "faithful":
                label, kind = "supports", "doc-faithful"
            elif claim.get("on_bad"):
                label = "nei" if row["error_type"] == "unsupported" else "refutes"
                kind = f"doc-{row['error_type']}"
            else:
                continue  # a wrong answer's other sentences are its faithful answer's
            if (claim["text"], evidence, label) in seen:
                continue
            seen.add((claim["text"], evidence, label))
            out.append({"claim": claim["text"], "evidence": evidence, "label": label, "kind": kind,
                        "source": f"{set_name}:{row['id']}", "origin": "lab-cases"})
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dump_dir", type=Path, help="a folder of `eval check --dump` files, one <set>.jsonl per set")
    p.add_argument("out", type=Path)
    p.add_argument("sets", nargs="+", help="the sets of lab/cases to mine (never handbook or starlette)")
    args = p.parse_args(argv)
    kept = {"handbook", "starlette"} & set(args.sets)
    if kept:
        raise SystemExit(f"{sorted(kept)}: the answer-check cases are kept for measuring, never trained on")
    pairs: list[dict] = []
    for name in args.sets:
        dump = args.dump_dir / f"{name}.jsonl"
        if not dump.is_file():
            raise SystemExit(f"no dump {str(dump)!r}: run `ravbot eval check --dump {dump} ...` for {name} first")
        with dump.open(encoding="utf-8") as f:
            pairs += doc_pairs((json.loads(line) for line in f if line.strip()), name)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in pairs), encoding="utf-8")
    print(f"{len(pairs)} pairs {dict(Counter(r['label'] for r in pairs))} → {args.out}")


if __name__ == "__main__":
    main()
