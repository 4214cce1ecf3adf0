"""The wire between the parent and the sandboxed side: frames, signed replies, canonical state, tool
schemas, checker purity rules, folder names. Imported by both sides; imports neither."""
