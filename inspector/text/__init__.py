"""Text in and out: host strings made safe for a terminal, durations as the command line
writes them, secrets redacted from what a capture records."""
