"""The surfaces over mneme's memory: the Python API (`Memory`), REST, MCP, the LangGraph store, auth, the server's app and its sleep schedule."""
