"""The sandbox: an implementation run in a separate, confined worker process (`--isolate`, and always when grading)."""
