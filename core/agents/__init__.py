"""Sub-agents: the `Agent` tool, agent types and their files, claiming and settling tasks.

Builds on `engine/` (a sub-agent is a second agent loop) and may import everything below
it (`hooks`, `changes`, `engine`, `window`, `tools`, …); only `settings` and `runtime` sit above.
"""
