"""The report: its sections in one table, and the run of their collectors and health rules
into one Report."""
