"""scen_generator stage."""
