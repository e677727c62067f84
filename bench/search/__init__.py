"""Search and estimates: does the default search pick well, do the intervals hold the truth, what each option buys."""
