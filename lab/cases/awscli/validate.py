#!/usr/bin/env python3
"""Checks cases-awscli.jsonl (AWS CLI 1.45.11 example pages for s3 and lambda, reStructuredText .rst) against the
answer-check schema, with the npm set's validator (one set of rules; .rst files are read as they are).

Usage: python3 validate.py [cases.jsonl] [corpus_dir]
"""
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.argv[1:] = [sys.argv[1] if len(sys.argv) > 1 else str(HERE / "cases-awscli.jsonl"),
                sys.argv[2] if len(sys.argv) > 2 else str(HERE / "corpus")]
runpy.run_path(str(HERE.parent / "npm" / "validate.py"), run_name="__main__")
