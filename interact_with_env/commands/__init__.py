"""One module per ``python -m interact_with_env`` subcommand."""
