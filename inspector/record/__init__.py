"""Recording: the SQLite sample store, the recorder, history tables, ioping log import."""
