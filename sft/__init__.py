"""sft stage."""
