"""One package per benchmark, the same module names for the same roles (items, prompts, task,
record, metrics, queries, charts, commands); each declares itself (`BENCHMARK` in its
`__init__.py`) and core/registry.py discovers it. Not wired to the store here: discovery imports
this package for `--help`, which must not load the store (core.engine and core.services wire it)."""
