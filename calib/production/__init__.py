"""Using a configuration: the versioned config document and export folder, the removal manifest, production targets, engines (local, Spark)."""
