"""What runs confined, or forks what does: the fork server, the host, templates and cells (docs/runtime.md).

Nothing here imports the parent's side of the runtime (an import-linter contract holds it)."""
