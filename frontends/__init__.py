"""The front ends' shared entry: the `todo-agent` command (`cli`) and headless `-p` (`headless`).

The full-screen app is `todo_agent.tui`; `cli` imports it only when it runs it, so the
headless path never loads Textual. Installed as `todo_agent.frontends` (see pyproject).
"""
