"""The five studies: one notebook each, one module each for the orchestration the notebook calls."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = ROOT / "notebooks"
PARAMS = ROOT / "papermill-params"
PUBLISHED = ROOT / "data" / "published"


@dataclass(frozen=True)
class Study:
    id: str
    notebook: str
    title: str
    seed: str

    @property
    def notebook_path(self) -> Path:
        return NOTEBOOKS / self.notebook

    @property
    def params_dir(self) -> Path:
        return PARAMS / self.id

    @property
    def available(self) -> bool:
        return self.notebook_path.is_file()

    def parameter_files(self) -> list[Path]:
        return sorted(self.params_dir.glob("*.yaml")) if self.params_dir.is_dir() else []


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
