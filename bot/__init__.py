"""ravbot's composition root: settings → objects, the CLI, feedback, scheduling, admin, serving."""
