"""Local stand-ins for remote services (Slack, Discord, OpenAI-compatible, MediaWiki). Never our code."""
