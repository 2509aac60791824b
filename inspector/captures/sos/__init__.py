"""Reading a sosreport as a host root: its command outputs as facts (see inspector.captures.sosreport)."""
