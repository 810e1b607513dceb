"""The Learn MCP endpoint: its wire format and our client."""
