"""interact_with_env stage."""
