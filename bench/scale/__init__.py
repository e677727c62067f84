"""Scale and memory: peak RSS of streaming, sweeping, applying and drawing as the corpus grows, hostile corpora included."""
