"""Screenshots: the README's images taken from the running app, and every page at three widths for looking at."""
