"""The tools the model calls, one module per family with its descriptions in `.md` beside it,
the declaration seam (`base`, `arguments`) and the per-call context every tool gets (`context`).

Imports the session, the lifecycle seams, events, the task list, the model seam and the small
helpers; never the permission gate (tools never decide their own permission: they declare
what they touch, `core/access.py`, and the gate decides) or the engine.
"""
