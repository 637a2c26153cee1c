"""The chat-model seam (`base`), what a valid history is (`history`), its two implementations
(`scripted`, `openai_chat` over real HTTP), what a server says about itself (`server`)
which of its failures are worth waiting out (`transient`) and for how long (`retry`), and
what bytes are an image a model reads and the part that carries one (`images`).

Imports only `redact` of core; `openai_chat` is the one module in the project that
imports `openai`, and it is loaded only after the first frame.
"""
