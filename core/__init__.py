"""Error-handling workbench core: plain Python (no Streamlit), in layers — `registry` (the only
shared place that knows a benchmark), `engine` (task contract, runner, client, templates, the
generic result record), `store` (the DuckDB file, its schema), `services` (grid, export, rescore,
jobs, audit, playground, comparison) and `benchmarks/<name>` (one package per benchmark)."""
