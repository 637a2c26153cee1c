"""The agent engine: everything but drawing. Folders by job (ARCHITECTURE.md has the map);
nothing here imports Textual or Rich, and only `model/openai_chat.py` imports `openai`.
"""

__version__ = "0.1.0"
