"""The five studies: one notebook each, one module each (the protocol in base.py). This registry is light:
it names modules and notebooks without importing them."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .. import paths


@dataclass(frozen=True)
class Study:
    id: str
    notebook: str
    title: str
    seed: str

    @property
    def notebook_path(self) -> Path:
        return paths.NOTEBOOKS / self.notebook

    @property
    def params_dir(self) -> Path:
        return paths.PARAMS / self.id

    @property
    def available(self) -> bool:
        return self.notebook_path.is_file()

    def parameter_files(self) -> list[Path]:
        return sorted(self.params_dir.glob("*.yaml")) if self.params_dir.is_dir() else []

    def module(self) -> ModuleType:
        return importlib.import_module(f"{__name__}.{self.id}")

    def params_class(self) -> type:
        return self.module().Params


STUDIES: dict[str, Study] = {
    s.id: s
    for s in (
        Study("tls", "01_tls_overhead.ipynb", "TLS overhead on connections: MongoDB and MySQL", "000"),
        Study("auth", "02_auth_short_connections.ipynb", "Authentication cost with short connections", "001"),
        Study("tde", "03_tde_impact.ipynb", "Transparent data encryption impact", "002"),
        Study("https", "04_https_handshake.ipynb", "HTTPS vs HTTP under load", "003"),
        Study("audit", "05_audit_comparison.ipynb", "Audit approaches compared", "004"),
    )
}
