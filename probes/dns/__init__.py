"""The DNS failover probe: queries each nameserver as glibc would and predicts failover delays."""
