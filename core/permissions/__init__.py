"""Who may run what: the modes (`modes`), the rules (`rules`), the gate that decides
(`policy`), and the shell reader that sees what a command line runs (`shell`, `command_forms`).

Imports only `globs` of core: the gate is pure, it knows no task list, session or tool.
"""
