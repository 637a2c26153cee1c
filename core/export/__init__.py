"""Exporting a session for people to read or keep: its conversation walked into blocks
(`blocks`), written as Markdown (`markdown`), one self-contained HTML page (`page`) or the
transcript's JSON records (`source`, which also reads a session and its plan from disk
without starting an agent), and the file written (`formats`).

Imports the session, the task list and the record of changes, the parsers of what the
person typed (`engine.person_shell`, `input`), the model seam and the small helpers
(`atomic`, `redact`, `terminal`); never the runtime, settings, the tools or the gate. The
front ends (`/export`, `todo-agent export`) call `formats` and stay thin.
"""
