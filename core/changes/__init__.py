"""What each task did and changed: the per-task record of files (`log`), the lifecycle
observers that feed it (`recorder`), the workspace scan (`scan`) and rewinding (`rewind`).

Imports the task list, the lifecycle seams, events and `atomic`; the engine knows it only
through those seams.
"""
