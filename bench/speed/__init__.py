"""Speed: text in -> signature out, candidates, joins, a sweep, an export, the first start; wall seconds beside the load."""
