"""MCP servers: what a configured server is (`config`), its tool names (`names`), trust in a
project's servers (`trust`), the SDK behind one thin adapter (`adapter`), one server owned by
one asyncio task (`server`), their tools and results (`tools`, `results`, `search`) and all of
them together (`manager`).

Imports the tools' declaration seam, the session's data directory, the task list's atomic
store, the image types a model reads (`model/images.py`) and the small helpers. Only
`adapter` imports the `mcp` SDK, and only once a server is configured: no SDK type leaves
this folder.
"""
