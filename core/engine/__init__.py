"""The engine: the task contract and the runner, the model client and endpoints, prompt
templates, sampling, and the generic result record with its one writer."""

from core.declared import wire_store

wire_store()  # a task's process (e.g. a test's own task) opens the store: it learns the views
