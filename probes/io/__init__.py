"""The IO latency probe (ioping-class): target, request loop, statistics, formatting."""
