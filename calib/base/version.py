"""The package version (the config document records it)."""

__version__ = "0.1.0"
