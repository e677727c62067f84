"""Human decisions: the append-only review store (SQLite, PostgreSQL), the team's label rule and adjudication, agreement, blind overlap, and a team whose PostgreSQL database checks who writes (team)."""

from calib.base.moved import forward_folder

__getattr__ = forward_folder(__name__)  # the old module calib.review, for one release
