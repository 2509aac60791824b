"""Inspector's own child processes: pipes to them that fail with EPIPE, and children that
end with their parent."""
