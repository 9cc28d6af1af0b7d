"""ravbot's platform-neutral RAG + RAV pipeline. Read `pipeline/answer.py` first."""
