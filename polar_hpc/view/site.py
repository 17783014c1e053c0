"""``polar-hpc view RUN``: a static HTML site of a run, opened from the filesystem (no server)::

    OUT/index.html            filterable, sortable table of sessions; links the report and its plots
    OUT/sessions/<key>.html   one page per session
    OUT/report/               ``polar-hpc report`` output (report.md, PNG plots)
    OUT/viewer.css, viewer.js
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.store.reader import EmptySelection, ShardReader
from polar_hpc.store.select import TraceSelect
from polar_hpc.view.html import run_page, session_page
from polar_hpc.view.model import SessionView, TokenTexts, session_view
from polar_hpc.view.static import CSS, JS

log = get_logger("view")


class SiteStats(msgspec.Struct, kw_only=True):
    sessions: int
    pages: int
    bytes: int
    seconds: float
    index: str


def _write(path: Path, text: str) -> int:
    data = text.encode()
    path.write_bytes(data)
    return len(data)


def write_site(run: str | os.PathLike[str], out: Path, *, session: str | None = None,
               tokenizer: TokenTexts | None = None,
               accept: float = 1.0, report: bool = True) -> SiteStats:
    """Write the site of ``run`` under ``out``; ``session`` writes that session's page only.

    Raises ``MissingShards`` for a run without shards, ``EmptySelection`` when no session (or not ``session``)
    is found."""
    t0 = time.perf_counter()
    reader = ShardReader(run, must_exist=True)
    flt = TraceSelect(task_ids=frozenset({session.rpartition("/")[0] or session})) if session else None
    (out / "sessions").mkdir(parents=True, exist_ok=True)
    size = _write(out / "viewer.css", CSS) + _write(out / "viewer.js", JS)
    views: list[SessionView] = []
    for r in reader.results(flt):
        if session is not None and r.key != session:
            continue
        v = session_view(r, accept=accept, tokenizer=tokenizer)
        size += _write(out / "sessions" / v.page, session_page(v))
        v.traces, v.vocab = [], {}  # the table needs the header only
        views.append(v)
    if not views:
        where = f"{len(reader.shards)} shards under {run}"
        raise EmptySelection(f"no session {session!r} in {where}" if session else f"no sessions in {where}")
    if session is not None:
        index = out / "sessions" / views[0].page
    else:
        plots: list[str] = []
        report_md = None
        if report:
            from polar_hpc.report.run import write_report

            write_report([run], out / "report", accept=accept)
            plots = sorted(f"report/{p.name}" for p in (out / "report").glob("*.png"))
            report_md = "report/report.md"
        views.sort(key=lambda v: v.key)
        index = out / "index.html"
        size += _write(index, run_page(f"Run {Path(run).resolve().name}", views, plots, report_md))
    stats = SiteStats(sessions=len(views), pages=len(views) + (session is None), bytes=size,
                      seconds=time.perf_counter() - t0, index=str(index))
    log.info("viewer: %d session pages, %.1f MB in %.1f s -> %s", stats.sessions, size / 1e6, stats.seconds, index)
    return stats
