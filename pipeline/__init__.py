"""The orchestrator: runs every stage's own entry point in order, as separate processes.

It sits above the stages and imports none of them; it only reads their artifacts to summarise.
"""
