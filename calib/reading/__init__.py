"""Reading: input files (strict UTF-8, checked records), labeled samples and their loaders, a drawn set's design."""

from calib.base.moved import forward_folder

__getattr__ = forward_folder(__name__)  # the old module calib.reading, for one release
