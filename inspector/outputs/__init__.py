"""Machine-readable outputs: the Nagios check, Prometheus export and metrics (the --json
documents and their schema are in inspector.documents)."""
