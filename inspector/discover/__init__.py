"""Collectors: one module per subject, each `collect(root) -> dataclass`, never raising."""
