"""skel_builder stage."""
