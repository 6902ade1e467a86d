"""The names a memory's fields take (tiers, types, sources, priorities), apart from `models` so that the command
line's parser has them without loading the records' dataclasses (a command such as `agentmem search`, handed to the
shared process, needs nothing more)."""

TIERS = ("working", "episodic", "semantic", "procedural")
# What search, `agentmem list` and the viewer show unless asked for more: the working tier holds the raw captured
# events (prompts, tool calls), the material of the others.
SHOWN_TIERS = ("episodic", "semantic", "procedural")
TYPES = ("pattern", "preference", "architecture", "bug", "workflow", "fact", "decision", "context", "summary")
SOURCES = ("user", "agent", "hook", "consolidation", "import")
PRIORITIES = ("P0", "P1", "P2")
