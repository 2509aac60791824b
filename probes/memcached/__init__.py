"""The memcached load probe (memslap-class): engine, workers, workload, ramp, server stats."""
