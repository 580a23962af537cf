"""One package per benchmark, the same module names for the same roles (items, prompts, task,
record, metrics, queries, charts, cli); each is registered in core/registry.py."""
