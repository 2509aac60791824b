"""Machine-readable outputs: the Nagios check, Prometheus export and metrics, the JSON schema
and documents."""
