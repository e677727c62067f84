"""Shared by every stage and by the CLI and app: errors and path checks, atomic writes, JSON documents, the memory budget, settings declared once (fields), small validators."""
