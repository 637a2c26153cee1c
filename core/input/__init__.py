"""What the person types, before it reaches the model: `@` mentions (the workspace's file
index and the attachments), custom slash commands (their files and their expansion).

Imports the tools' file helpers and shell runner, the permission gate, the session's data
folder, events and the task list's atomic file; never the engine, hooks or change records.
"""
