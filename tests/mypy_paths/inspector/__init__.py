# For mypy only (pyproject.toml [tool.mypy] mypy_path): probes/ and widgets/ install as
# inspector.probes and inspector.widgets (setuptools package-dir), a mapping mypy cannot read,
# so these symlinks give them that name. The real package is ../../inspector.
