"""The one door to a host: HostRoot, confinement to the root, bounded reads, safe extraction
and the temporary directories they unpack into."""
