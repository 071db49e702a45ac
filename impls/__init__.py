"""Implementations under test, one module each, obeying the contract of DESIGN.md (see README.md)."""
