"""The app services, generic over the registry: the responses grid, export, rescore, jobs,
the cross-benchmark comparison, published tables, the Overview, `init`, shared charts."""
