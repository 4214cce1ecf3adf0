"""One module per ``python -m scen_generator`` subcommand."""
