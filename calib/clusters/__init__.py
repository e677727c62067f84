"""Pairs -> groups: ground truth from labels, clustering policies, representatives and chaining diagnostics."""
