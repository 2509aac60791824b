"""Inspector: storage, virtualization, network and resolver discovery with live probes."""
__version__ = "0.1.0"
