#!/usr/bin/env python3
"""Checks cases-cargo.jsonl (The Cargo Book as installed with cargo 1.95.0, mdBook HTML pages in corpus/reference,
corpus/guide, corpus/commands and corpus/faq.html) against the answer-check schema, with the npm set's validator
(one set of rules; .html pages are checked against their visible text, tags removed and entities unescaped).

Usage: python3 validate.py [cases.jsonl] [corpus_dir]
"""
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.argv[1:] = [sys.argv[1] if len(sys.argv) > 1 else str(HERE / "cases-cargo.jsonl"),
                sys.argv[2] if len(sys.argv) > 2 else str(HERE / "corpus")]
runpy.run_path(str(HERE.parent / "npm" / "validate.py"), run_name="__main__")
