"""Before and after: saved snapshots, their diff, and fleets of them."""
