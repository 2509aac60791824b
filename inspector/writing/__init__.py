"""Output files (`-o`, `--textfile`, `--db`): where one goes and how it is written, atomically
and never through another user's link."""
