"""`agentmem import-history`: a user's past sessions of Claude Code, Cursor, Codex and Gemini CLI."""
