"""Integrations with other tools (optional dependencies)."""
