"""The corpora the benchmarks run on: real text shipped here, generated rare duplicates, manual pages, person records, held-out samples."""
