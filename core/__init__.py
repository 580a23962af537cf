"""Error-handling workbench core: plain Python (no Streamlit) — storage, data, models, metrics, charts."""
