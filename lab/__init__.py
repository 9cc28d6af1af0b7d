"""The lab: what measures or trains ravbot (evaluation, trainers, their commands); never imported when answering."""
