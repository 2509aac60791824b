"""Bounded probes (installed as inspector.probes): io_latency, memcached, dns_failover."""
