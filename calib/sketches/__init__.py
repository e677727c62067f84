"""Text -> sketches: normalization (Representation), shingles and their hashes, boilerplate stripping, MinHash / OPH / ICWS signature schemes, chunked threading."""
