"""The plan: the task values, their rules, the file format, the store on disk, its history,
its rendering, and the reminders that put it back in front of the model.

Imports only `model` (messages) and `atomic` of core: the task list knows no engine,
session, events or permissions, so everything else can build on it.
"""
