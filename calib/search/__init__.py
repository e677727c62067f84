"""Choosing a configuration: Config, the workspace cache, grids (typed or chosen from the sample), the sweep, the recommendation, seeds and sensitivity."""
