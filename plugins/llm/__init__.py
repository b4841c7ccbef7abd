"""LLM operators for DEI."""
