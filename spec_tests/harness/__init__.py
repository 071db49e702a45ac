"""The harness: the only code that loads implementations, converts arrays, compares and reports."""
