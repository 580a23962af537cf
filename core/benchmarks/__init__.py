"""One package per benchmark, the same module names for the same roles (items, prompts, task,
record, metrics, queries, charts, commands); each declares itself (`BENCHMARK` in its
`__init__.py`) and core/registry.py discovers it."""

from core.declared import wire_store

wire_store()  # the store learns the benchmarks' views and caches from their packages
