"""Export placeholder.

EXPORT-WIRING: ``calib/export.py`` (config schema/versioning, production
targets, manifest) is being built in parallel. When it lands, replace
:func:`config_json` with its writer and add its files to the Export page at
the place marked ``EXPORT-WIRING`` in ``pages/6_Export.py``.
"""

from __future__ import annotations

import json

from calib.config import Config


def config_json(cfg: Config) -> str:
    """The configuration as JSON (``Config.to_dict()`` plus its fingerprint)."""
    return json.dumps({"config": cfg.to_dict(), "fingerprint": cfg.fingerprint()}, indent=2, sort_keys=True)


def config_filename(cfg: Config) -> str:
    return f"calib-config-{cfg.fingerprint()}.json"
