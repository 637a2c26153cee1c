"""Who may run what: the modes (`modes`), the rules (`rules`), the gate that decides
(`policy`), and the shell reader that sees what a command line runs (`shell`, `command_forms`).

Imports only `access`, `globs` and `places` of core: the gate is pure, it knows no task list
or session, and a tool only by what it declares (`core/access.py`).
"""
