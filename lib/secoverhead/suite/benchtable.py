"""How `secoverhead compare` prints, the way benchstat users read it: one line per experiment, arm, cell and
metric with both medians and `vs A`, which is `~` where no difference is detectable (the interval of B / A
holds 1, or lies wholly within the +-2 % too small to act on) and the signed change otherwise, with
better/worse once the whole interval is beyond the noise; a geomean line per metric; text that fits the
terminal, or CSV, JSON, Markdown.

A regression is a row whose change is "worse": its whole interval lies beyond the noise on the bad side and
its test is significant after Holm over every row (crossrun).
`regressions()` counts them; the CLI exits 1 when there is one, for CI jobs.
"""

from __future__ import annotations

import json
import math
import shutil
import sys

import numpy as np
import pandas as pd

from secoverhead.core.units import p_text, significant

FORMATS = ("text", "csv", "json", "markdown")
COUNTS = ("n_a", "n_b", "noisy_a", "noisy_b")


ALPHA = 0.05  # benchstat's: a change whose test's p is above it is printed `~`


def vs(row: pd.Series | dict) -> str:
    """`~` when no difference is detectable (the interval holds 1, lies within the noise, or the test's p is
    above ALPHA, as benchstat prints it); otherwise the signed change, with better/worse once the whole interval
    is beyond the noise: `+20.1 % worse (p<0.001)`."""
    lo, hi = row.get("ci_low", float("nan")), row.get("ci_high", float("nan"))
    p = row.get("p", float("nan"))
    unsure = p is not None and math.isfinite(p) and p > ALPHA
    if row["change"] == "no change" or not math.isfinite(row["ratio"]) or not lo <= hi or lo <= 1 <= hi or unsure:
        return "~"
    pct = 100 * (row["ratio"] - 1)
    word = f" {row['change']}" if row["change"] in ("better", "worse") else ""
    return f"{pct:+.1f} %{word}" + (f" ({p_text(p)})" if p is not None and math.isfinite(p) else "")


def with_geomeans(df: pd.DataFrame) -> pd.DataFrame:
    """The rows, each metric followed by its geomean line (geometric means of both medians and of B / A)."""
    out = []
    for metric, g in df.groupby("metric", sort=False):
        out.append(g)
        a, b, r = (g[c].to_numpy(dtype=float) for c in ("a", "b", "ratio"))
        ok = (a > 0) & (b > 0) & (r > 0)
        if ok.sum() < 2:
            continue
        gm = {
            "experiment": "geomean",
            "arm": "",
            "cell": "",
            "metric": metric,
            "unit": g["unit"].iloc[0],
            "a": float(np.exp(np.log(a[ok]).mean())),
            "b": float(np.exp(np.log(b[ok]).mean())),
            "ratio": float(np.exp(np.log(r[ok]).mean())),
        }
        out.append(pd.DataFrame([gm]))
    return pd.concat(out, ignore_index=True)


def regressions(df: pd.DataFrame) -> int:
    """Rows printed as worse: the change beyond the noise on the bad side, and not `~` (what is printed `~` never
    fails a job)."""
    return int(sum(r["change"] == "worse" and vs(r) != "~" for r in df.to_dict("records")))


def noisy_regressions(df: pd.DataFrame) -> list[str]:
    """The regressions that rest on runs the noise monitor flagged, each as 'experiment / arm (A 3 of 5, B 4 of 5
    runs flagged)': a difference there may be the machine's, and the reader is told so. The same rows as
    `regressions` counts: one printed `~` is no regression, and gets no note."""
    if not {"noisy_a", "noisy_b"} <= set(df.columns):
        return []
    return [
        f"{r['experiment']} / {r['arm']} {r['metric']} (A {int(r['noisy_a'])} of {int(r['n_a'])}, "
        f"B {int(r['noisy_b'])} of {int(r['n_b'])} runs flagged)"
        for r in df.to_dict("records")
        if r["change"] == "worse" and vs(r) != "~" and (r["noisy_a"] or r["noisy_b"])
    ]


def _num(x: float) -> str:
    """Three significant digits with an SI prefix from a thousand up (13.4k, 2.50M), as benchstat prints; smaller
    numbers to four."""
    if x is None or not math.isfinite(x):
        return "-"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale * 0.9995:  # what rounds to 1.00M is 1.00M, not 1000k
            return f"{x / scale:#.3g}".rstrip(".") + prefix
    return significant(x, 4)


def _printable(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in with_geomeans(df).to_dict("records"):
        geo = r["experiment"] == "geomean"
        name = "geomean" if geo else " / ".join(x for x in (r["experiment"], r["arm"], r["cell"]) if x)
        unit = f" ({r['unit']})" if isinstance(r.get("unit"), str) and r["unit"] else ""
        rows.append(
            {
                "what": name,
                "metric": f"{r['metric']}{unit}",
                "A": _num(r["a"]),
                "B": _num(r["b"]),
                "vs A": f"{100 * (r['ratio'] - 1):+.1f} %" if geo else vs(r),
                "n": "" if geo else f"{int(r['n_a'])}+{int(r['n_b'])}",
            }
        )
    return pd.DataFrame(rows)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def text(df: pd.DataFrame, width: int | None = None) -> str:
    """Aligned columns within `width` (the terminal's when printing to one; a pipe or file gets every
    character): the first column gives way first."""
    if width is None:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 10_000
    t = _printable(df)
    cols = list(t.columns)
    widths = {c: max(len(c), *(len(str(v)) for v in t[c])) for c in cols}
    spare = width - sum(widths.values()) - 2 * (len(cols) - 1)
    if spare < 0:
        widths["what"] = max(12, widths["what"] + spare)
    lines = ["  ".join(_fit(c, widths[c]).ljust(widths[c]) for c in cols).rstrip()]
    for r in t.to_dict("records"):
        cells = [_fit(str(r[c]), widths[c]) for c in cols]
        lines.append(
            "  ".join(
                v.ljust(widths[c]) if c in ("what", "metric") else v.rjust(widths[c])
                for v, c in zip(cells, cols, strict=True)
            ).rstrip()
        )
    return "\n".join(_fit(line, width) for line in lines)


def markdown(df: pd.DataFrame) -> str:
    t = _printable(df)
    head = "| " + " | ".join(t.columns) + " |\n|" + "|".join("---" for _ in t.columns) + "|\n"
    return head + "\n".join(
        "| " + " | ".join(str(v).replace("|", "\\|") for v in r) + " |" for r in t.itertuples(index=False)
    )


def render(df: pd.DataFrame, fmt: str = "text", width: int | None = None) -> str:
    if fmt == "text":
        return text(df, width)
    if fmt == "markdown":
        return markdown(df)
    full = with_geomeans(df).assign(
        vs_a=lambda d: [vs(r) if r["experiment"] != "geomean" else "" for r in d.to_dict("records")]
    )
    for col in (c for c in COUNTS if c in full):  # counts of runs are whole numbers (a geomean line has none)
        full[col] = full[col].astype("Int64")
    if fmt == "csv":
        return full.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(full.to_json(orient="records")), indent=1)
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
