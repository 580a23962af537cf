"""The app services, generic over the registry: the responses grid, export, rescore, jobs,
the cross-benchmark comparison, published tables, the Overview, `init`, shared charts."""

from core.declared import wire_store

wire_store()  # the store learns the benchmarks' views and caches from their packages
