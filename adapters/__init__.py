"""Translation between chat platforms (and the terminal) and ravbot's pipeline types."""
