"""The chat-model seam (`base`), what a valid history is (`history`), its two implementations
(`scripted`, `openai_chat` over real HTTP) and what a server says about itself (`server`).

Imports only `redact` of core; `openai_chat` is the one module in the project that
imports `openai`, and it is loaded only after the first frame.
"""
