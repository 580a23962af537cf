"""One package per benchmark, the same module names for the same roles (items, prompts, task,
record, metrics, queries, charts, cli); each is registered in core/registry.py."""

from core.declared import wire_store

wire_store()  # the store learns the benchmarks' views and caches from their packages
