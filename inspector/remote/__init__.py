"""Hosts with nothing installed, read over SSH with only a POSIX shell there (issue 30).

- ssh.py: the system `ssh` client as the operator has it (~/.ssh/config, ProxyJump, agents,
  ControlMaster, known_hosts), options passed through, host key checks never turned off; one
  run of a shell script on the host, bounded by a deadline, a stall timeout and a byte cap.
- capture.py: the shipped inspector/share/capture.sh run on the host; what comes back is a
  capture like `inspector capture` writes, checked by the same safe extraction as any --root.
  A host that stops answering mid-stream costs its deadline: salvage.py keeps the members
  that arrived whole and says what is missing in the sidecar.
- live.py and frames.py: the live samplers' reads over one SSH connection: a shell loop
  and one awk it starts print the few files each sample needs when asked (no process
  started per sample where the host has awk), framed and checked; streamed_root.py
  serves them to the samplers as a HostRoot, so `top`, the TUI and the live findings work
  unchanged. What a frame reads is cut to what moved (process_io.py: the io of processes
  that ran; netdev.py: NIC counters from /proc/net/dev); fill.py makes filesystem fill of
  the host's df, kernel_log.py its kernel log read with dmesg.
- fleet.py: many hosts captured with bounded concurrency into DIR/<host>/.

Nothing from a host is ever executed here, and nothing is written on the host.
"""
