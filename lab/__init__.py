"""The lab: code that measures ravbot (evaluation harnesses and their helpers), never imported when answering."""
