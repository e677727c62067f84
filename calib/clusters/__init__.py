"""Pairs -> groups: ground truth from labels, clustering policies, representatives and chaining diagnostics."""

from calib.base.moved import forward_folder

__getattr__ = forward_folder(__name__)  # the old module calib.clusters, for one release
