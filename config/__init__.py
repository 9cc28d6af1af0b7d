"""ravbot's settings: the one table of settings and the only code that reads the environment."""
