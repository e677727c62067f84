"""Choosing a configuration: Config, the workspace cache, grids (typed or chosen from the sample), the sweep, the recommendation, seeds and sensitivity."""

from calib.base.moved import forward_folder

__getattr__ = forward_folder(__name__)  # the old module calib.search, for one release
