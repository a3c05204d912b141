"""The agent reply engine: knowledge retrieval, model providers, tools.

`replies.knowledge.decide` is the offline `knowledge` provider's matcher.
"""
