"""Reading: input files (strict UTF-8, checked records), labeled samples and their loaders, a drawn set's design."""
