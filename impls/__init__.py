"""Implementations under test, one module each, obeying the contract in CONTRACT.md (see README.md)."""
