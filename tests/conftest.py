"""Shared pytest configuration. Kept small: fixtures live with the tests that use them (tests/notebooks/ for the
notebook harness)."""
