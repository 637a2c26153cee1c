"""Keeping the conversation inside the model's context window: token accounting
(`tokens`), the keeper that decides when (`keeper`), and the summary itself (`compaction`).

Imports the lifecycle seams, events, the session, the task list and the model; never a
tool or the permission gate.
"""
