"""Local stand-ins for remote services (Slack, Discord, OpenAI-compatible, MediaWiki) and for the
embedding model (`embedder`). Never our code."""
