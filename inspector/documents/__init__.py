"""The --json documents the commands print: what opens each one (kind, schema_version) and
their JSON Schema."""
