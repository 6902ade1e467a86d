"""What is brought back: search (retrieve, fuse, rerank, pack), the session-start briefing and the prompt's
context, and the pure policy they use (ranking, snippets, time words, anchors)."""
