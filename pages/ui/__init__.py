"""The shared UI layer of the pages (not a page: app.py lists the pages explicitly)."""
