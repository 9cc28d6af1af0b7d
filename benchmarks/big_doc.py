"""How reading and chunking scale with the size of ONE document: a big manual or API reference
must cost in proportion to its size, not to its size squared.

For each format (Markdown, reStructuredText, plain text) a document is made by repeating real
documentation (this repository's `docs/`, and the CMake pages of `lab/cases` for rst) up to each
size, then timed through `load_file` (read, markup → Markdown), `chunk_document`, and
`chunk_texts` (the sentences a question may embed, listed at index time). No model is loaded.
The "s per MB" column should stay flat as the size grows; a column that grows with the size is
a cost that grows with its square.

    .venv/bin/python benchmarks/big_doc.py                        # 0.25, 1 and 4 MB
    .venv/bin/python benchmarks/big_doc.py --sizes 0.5,2 --formats md
    .venv/bin/python benchmarks/big_doc.py --compare-code /tmp/before   # another copy first, same run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"md": (ROOT / "docs", "*.md"), "txt": (ROOT / "docs", "*.md"), "rst": (ROOT / "lab" / "cases" / "cmake" / "corpus", "**/*.rst")}


def base_text(fmt: str) -> str:
    folder, pattern = SOURCES[fmt]
    files = sorted(folder.glob(pattern))
    if not files:
        raise SystemExit(f"no {pattern} files under {folder} for the {fmt!r} document")
    return "\n\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


def measure(code: Path, fmt: str, megabytes: float) -> dict:
    """Time the three stages on one document of `megabytes`, with the code in `code`."""
    sys.path.insert(0, str(code))
    from pipeline.chunking import chunk_document
    from pipeline.ingest import load_file
    from pipeline.sentence_vectors import chunk_texts

    base = base_text(fmt)
    text = (base * (int(megabytes * 1e6) // len(base) + 1))[:int(megabytes * 1e6)]
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / f"big.{fmt}"
        path.write_text(text, encoding="utf-8")
        start = time.perf_counter()
        doc = load_file(path, "bench", max_bytes=len(text.encode()) + 1)
        loaded = time.perf_counter()
        chunks = chunk_document(doc)
        chunked = time.perf_counter()
        texts = sum(len(chunk_texts(c)) for c in chunks)
        listed = time.perf_counter()
    return {"format": fmt, "mb": megabytes, "chunks": len(chunks), "texts": texts, "load_s": loaded - start,
            "chunk_s": chunked - loaded, "texts_s": listed - chunked}


def run(code: Path, formats: list[str], sizes: list[float]) -> list[dict]:
    """Each (format, size) in its own process, so that no run warms the caches of the next."""
    rows = []
    for fmt in formats:
        for mb in sizes:
            out = subprocess.run([sys.executable, __file__, "--child", str(code), fmt, str(mb)],
                                 capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def report(label: str, rows: list[dict]) -> None:
    print(f"\n{label}")
    print(f"{'format':<7}{'MB':>6}{'chunks':>8}{'load s':>9}{'chunk s':>9}{'texts s':>9}{'s per MB (all)':>16}")
    for r in rows:
        total = r["load_s"] + r["chunk_s"] + r["texts_s"]
        print(f"{r['format']:<7}{r['mb']:>6}{r['chunks']:>8}{r['load_s']:>9.2f}{r['chunk_s']:>9.2f}"
              f"{r['texts_s']:>9.2f}{total / r['mb']:>16.2f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="0.25,1,4", help="Document sizes in MB (the default max_bytes is 5 MB).")
    p.add_argument("--formats", default="md,rst,txt")
    p.add_argument("--compare-code", default="", help="Another copy of the code, measured first in the same run.")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        code, fmt, mb = args.child
        print(json.dumps(measure(Path(code), fmt, float(mb))))
        return
    formats = [f for f in args.formats.split(",") if f]
    unknown = [f for f in formats if f not in SOURCES]
    if unknown:
        raise SystemExit(f"unknown format(s) {unknown}: choose from {sorted(SOURCES)}")
    sizes = [float(s) for s in args.sizes.split(",") if s]
    if args.compare_code:
        report(f"code: {args.compare_code}", run(Path(args.compare_code).resolve(), formats, sizes))
    report(f"code: {ROOT}", run(ROOT, formats, sizes))


if __name__ == "__main__":
    main()
