"""The engine: the task contract and the runner, the model client and endpoints, prompt
templates, sampling, and the generic result record with its one writer."""
