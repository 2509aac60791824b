"""The Textual app (the only place besides widgets/ that imports Textual)."""
