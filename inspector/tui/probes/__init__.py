"""The Probes screen: the form, the runs (one child process each) and their charts."""
