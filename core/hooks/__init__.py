"""The person's shell-command hooks, Claude-Code compatible: what a hook is (`spec`), one
hook as a process (`process`), the runner (`runner`), trust (`trust`) and the seams (`wiring`).

Imports the tools' context, the lifecycle seams, events, the session and the task list;
the engine knows hooks only through the lifecycle.
"""
