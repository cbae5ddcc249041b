"""run.json as the pipeline writes it, for tests that lay out a report by hand."""

from __future__ import annotations

import json
from typing import Any

from secoverhead.core.report import REPORT_SCHEMA, scale_for


def run_record(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields with the schema this checkout reads and the scale the pipeline would write for them (from their
    parameter files, else their set's name); either may be given to override it."""
    scale = scale_for(fields.get("params_files"), str(fields.get("params_name", "")))
    return {"schema": REPORT_SCHEMA, "scale": scale, **fields}


def run_json(fields: dict[str, Any]) -> str:
    return json.dumps(run_record(fields))
