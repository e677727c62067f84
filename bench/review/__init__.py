"""Review: decisions per second of the review stores, and what reviewing as a team costs."""
