"""One package per benchmark, the same module names for the same roles (items, prompts, task,
record, metrics, queries, charts, commands); each declares itself (`BENCHMARK` in its
`__init__.py`) and core/registry.py discovers it."""
