"""The MCP stdio server (`agentmem serve`): its tools, and the shapes and size cap of their answers."""
