"""The turn: the agent loop (`loop`), one response's tool calls (`batch`), what keeps a
turn from running away (`guards`), how long to wait before asking a server again (`retry`)
and the system context (`instructions`).

Imports the window, the tools, the permission gate, the session, the task list and the
model seam; never hooks or change records (they plug in through `lifecycle`).
"""
