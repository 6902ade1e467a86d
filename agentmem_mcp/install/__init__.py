"""`agentmem install`: each client's config files, edited in place so the rest stays as it was."""
