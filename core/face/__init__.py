"""The front ends' face of a `Runtime`, in named parts: plan, team, MCP, sessions, turn, trust.

Each part is a view over the runtime's current session (a `/new` swaps what it reads); it
may import everything below `runtime`, and `runtime` alone (for its type) imports it back.
"""
