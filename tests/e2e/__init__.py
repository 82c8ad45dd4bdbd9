"""End-to-end tests: the served graphs and surfaces (REST, MCP), the CLI, the schedule, faults,
the wheel and the image."""
