"""`todo-agent --acp`: todo-agent as an Agent Client Protocol agent (editors, acpx, Toad).

Drives `Runtime` through its face alone, as the TUI does; the only package here that
imports the ACP SDK (`acp`), and it never loads the TUI, Textual or Rich.
"""
