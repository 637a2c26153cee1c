"""Sessions: the JSONL transcript of a conversation (`transcript`) and where sessions
live on disk, listed and found (`directory`).

Imports only `tasks`, `model` and `atomic` of core.
"""
