"""The certify engine: one call of :func:`mtpp.certify` proves lower bounds and improves
partitions for one or several k within one budget."""
