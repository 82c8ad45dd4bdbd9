"""The `mneme` command line (`cli.main:app`): one Typer app, one console, one error path."""
