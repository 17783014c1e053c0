"""``polar-hpc report``: what a run produced, per repository and harness (the Polar paper's Table 2 layout).

Reads session tables, session blobs (timings, stats, errors, task metadata), trace offsets and finish reasons;
trace blobs only for engine timings. Engine throughput needs ``engine_time_s`` in trace metadata (engine seconds
of the trace's completions); shards without it report n/a. Failure reasons: ``polar_hpc.report.outcome``.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import msgspec
import numpy as np

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.report.outcome import failure_reason
from polar_hpc.report.types import Dist, GroupRow, HarnessRow, RunReport, SessionRow, stage_order
from polar_hpc.store.encode import decode_session_blob, decode_trace_blob
from polar_hpc.store.reader import EmptySelection, ShardReader
from polar_hpc.store.repo import repo_of
from polar_hpc.store.shardfile import (
    ShardError,
    open_shard,
    read_finish_reasons,
    read_offsets,
    read_policies,
    read_session_blobs,
    read_trace_blobs,
)
from polar_hpc.store.summary import reward_histogram
from polar_hpc.train.agreement import AgreementReport, agreement_markdown
from polar_hpc.train.grpo.metrics import StepMetrics, read_steps, reward_text
from polar_hpc.util.units import count, duration
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.shardmeta import agent_of, trace_from_shard
from polar_hpc.wire.traces import TraceStatus


def collect(runs: Sequence[str | os.PathLike[str]], accept: float) -> tuple[list[SessionRow], list[str]]:
    rows: list[SessionRow] = []
    problems: list[str] = []
    for run in runs:
        reader = ShardReader(run, must_exist=True)
        for path, table, first in reader.session_tables():
            try:
                with open_shard(path, check=False) as f:
                    po, ro = read_offsets(f)
                    sblobs, tblobs = read_session_blobs(f), read_trace_blobs(f)
                    finish = read_finish_reasons(f)
                    policies = read_policies(f)
            except (ShardError, OSError, KeyError, ValueError) as err:
                problems.append(f"{path}: {err}")
                continue
            to = table.trace_offsets
            for row in np.flatnonzero(first).tolist():
                sb = decode_session_blob(sblobs[row])
                a, b = int(to[row]), int(to[row + 1])
                engine = [trace_from_shard(decode_trace_blob(tblobs[t]).metadata)[0].engine_time_s
                          for t in range(a, b)]
                status, reward = int(table.status[row]), float(table.reward[row])
                reason = failure_reason(status=status, error=sb.error, evaluation=sb.evaluation, reward=reward,
                                        accept=accept, agent=agent_of(sb.metadata), finish_reasons=finish[a:b])
                rows.append(SessionRow(
                    key=table.keys[row], task_id=table.task_ids[row], repo=repo_of(table.task_ids[row], sb.metadata),
                    harness=table.harness[row], status=TraceStatus(status).name.lower(), reward=reward,
                    duration_s=sb.timings.get("total", float(table.duration_s[row])), turns=sb.stats.completions,
                    tokens=int(po[b] - po[a] + ro[b] - ro[a]), sampled_tokens=sb.stats.tokens_trainable,
                    timings=sb.timings, reason=reason,
                    engine_time_s=_total(engine), forced="oracle" in policies[a:b], run=str(run),
                ))
        problems += reader.problems
    return rows, problems


def _total(values: list[float]) -> float | None:
    return sum(values) if values else None


def _dist(values: Sequence[float]) -> Dist | None:
    if not values:
        return None
    a = np.asarray(values, dtype=np.float64)
    return Dist(float(a.mean()), float(np.median(a)), float(np.percentile(a, 95)))


def _groups(rows: Sequence[SessionRow], key: str, accept: float) -> list[GroupRow]:
    by: dict[str, list[SessionRow]] = defaultdict(list)
    for r in rows:
        by[getattr(r, key)].append(r)
    return sorted((_group(name, rs, accept) for name, rs in by.items()), key=lambda g: (-g.instances, g.name))


def _group(name: str, rs: Sequence[SessionRow], accept: float) -> GroupRow:
    acc = [r for r in rs if r.reason is None]
    return GroupRow(name, len({r.task_id for r in rs}), len(rs), len(acc), len(acc) / len(rs) if rs else 0.0,
                    len({r.task_id for r in acc}))


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None


def _harness_rows(rows: Sequence[SessionRow]) -> list[HarnessRow]:
    by: dict[str, list[SessionRow]] = defaultdict(list)
    for r in rows:
        by[r.harness].append(r)
    out = []
    for name, rs in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        acc = sum(1 for r in rs if r.reason is None)
        rewards = [r.reward for r in rs if np.isfinite(r.reward)]
        out.append(HarnessRow(
            name=name, sessions=len(rs), accepted=acc, rate=acc / len(rs),
            mean_reward=float(np.mean(rewards)) if rewards else None,
            median_turns=_median([r.turns for r in rs]), median_tokens=_median([r.tokens for r in rs]),
            median_duration_s=_median([r.duration_s for r in rs]),
            failures=sum(1 for r in rs if r.status != TraceStatus.COMPLETED.name.lower())))
    return out


def summarize(rows: Sequence[SessionRow], runs: Sequence[str], accept: float, problems: list[str]) -> RunReport:
    counts, edges = reward_histogram(np.asarray([r.reward for r in rows], dtype=np.float64))
    kinds = {r.forced for r in rows}
    stage_values: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for k, v in r.timings.items():
            stage_values[k].append(v)
    timed = [r for r in rows if r.engine_time_s]
    engine_tps = (sum(r.sampled_tokens for r in timed) / sum(r.engine_time_s or 0.0 for r in timed)
                  if timed else None)
    return RunReport(
        runs=list(runs), accept=accept, overall=_group("all", rows, accept), repos=_groups(rows, "repo", accept),
        harnesses=_groups(rows, "harness", accept), harness_stats=_harness_rows(rows),
        statuses=dict(Counter(r.status for r in rows)),
        reward_bins=edges, reward_counts=counts,
        turns=_dist([r.turns for r in rows]), tokens=_dist([r.tokens for r in rows]),
        sampled_tokens=_dist([r.sampled_tokens for r in rows]),
        stages={k: d for k in stage_order(stage_values) if (d := _dist(stage_values[k])) is not None},
        failures=dict(Counter(r.reason for r in rows if r.reason is not None).most_common()),
        engine_tokens_per_s=engine_tps, problems=problems,
        token_kind="forced" if kinds == {True} else "sampled + forced" if len(kinds) > 1 else "sampled",
        sessions_per_run={run: sum(1 for r in rows if r.run == run) for run in runs},
    )


def _table(title: str, groups: Sequence[GroupRow]) -> list[str]:
    lines = [f"| {title} | instances | sessions | accepted | rate | solved instances |", "|---|" + "---:|" * 5]
    lines += [f"| {g.name or '(none)'} | {g.instances} | {g.sessions} | {g.accepted} | {100 * g.rate:.1f}% | "
              f"{g.solved} |" for g in groups]
    return lines


def _harness_table(rows: Sequence[HarnessRow]) -> list[str]:
    def num(v: float | None) -> str:
        return "n/a" if v is None else count(round(v, 3))

    lines = ["| harness | sessions | accepted | rate | mean reward | median turns | median tokens | median duration "
             "| timeouts + errors |", "|---|" + "---:|" * 8]
    lines += [f"| {h.name or '(none)'} | {h.sessions} | {h.accepted} | {100 * h.rate:.1f}% | {num(h.mean_reward)} | "
              f"{num(h.median_turns)} | {num(h.median_tokens)} | {duration(h.median_duration_s)} | {h.failures} |"
              for h in rows]
    return lines


def _fmt(d: Dist | None) -> str:
    return "n/a" if d is None else f"{count(round(d.mean, 1))} | {count(round(d.median, 1))} | {count(round(d.p95, 1))}"


def _fmt_s(d: Dist) -> str:
    return f"{duration(d.mean)} | {duration(d.median)} | {duration(d.p95)}"


def render_markdown(rep: RunReport, plots: Sequence[str] = ()) -> str:
    o = rep.overall
    tps = "n/a (no engine timings in trace metadata)" if rep.engine_tokens_per_s is None \
        else f"{count(round(rep.engine_tokens_per_s, 1))} {rep.token_kind} tokens per second of engine time"
    lines = [
        f"# Run report: {', '.join(rep.runs)}", "",
        f"{o.sessions} sessions over {o.instances} instances; accepted (completed, reward >= {rep.accept:g}): "
        f"{o.accepted} ({100 * o.rate:.1f}%); instances with an accepted session: {o.solved}.", "",
        *(["Sessions per run: " + ", ".join(f"{run} {n}" for run, n in rep.sessions_per_run.items()), ""]
          if len(rep.sessions_per_run) > 1 else []),
        "Statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.statuses.items())), "",
        "## Acceptance per repository", "", *_table("repository", rep.repos), "",
        "## Per harness", "", *_harness_table(rep.harness_stats), "",
        "## Sessions", "", "| | mean | median | p95 |", "|---|---:|---:|---:|",
        f"| turns (model calls) | {_fmt(rep.turns)} |", f"| tokens (prompt + response) | {_fmt(rep.tokens)} |",
        f"| {rep.token_kind} tokens | {_fmt(rep.sampled_tokens)} |", "",
        "## Stages (pipeline order)", "", "| stage | mean | median | p95 |", "|---|---:|---:|---:|",
        *(f"| `{k}` | {_fmt_s(d)} |" for k, d in rep.stages.items()), "",
        f"Engine throughput: {tps}", "",
        "## Reward histogram", "", "| bin | sessions |", "|---|---:|",
        *(f"| [{rep.reward_bins[i]:.3g}, {rep.reward_bins[i + 1]:.3g}) | {c} |"
          for i, c in enumerate(rep.reward_counts)), "",
        "## Failure reasons", "", "| reason | sessions |", "|---|---:|",
        *(f"| {k.replace('|', '/')} | {v} |" for k, v in rep.failures.items()), "",
    ]
    if plots:
        lines += ["## Plots", "", *(f"![{Path(p).stem}]({Path(p).name})" for p in plots), ""]
    if rep.problems:
        lines += ["## Shards skipped", "", *(f"- {p}" for p in rep.problems), ""]
    return "\n".join(lines)


def grpo_section(steps: Sequence[StepMetrics]) -> str:
    """Markdown table of a GRPO trainer's steps, then its mismatch split over the run (empty without any)."""
    if not steps:
        return ""
    lines = ["", "## Training (GRPO)", "", "| step | reward | loss | grad norm | mean abs Δlogp | max | clipped "
             "| masked | rollout weights | waited |", "|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for m in steps:
        wait = m.wait_s / m.step_s if m.step_s else 0.0
        lines.append(f"| {m.step} | {reward_text(m)} | {m.loss:+.4f} | {_num(m.grad_norm)} | {m.logp_diff_mean:.2e} "
                     f"| {m.logp_diff_max:.2e} | {100 * m.clipped_share:.1f}% | {100 * m.masked_share:.1f}% "
                     f"| {','.join(m.rollout_versions)} | {100 * wait:.0f}% |")
    return "\n".join(lines) + "\n" + mismatch_section(steps)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def mismatch_section(steps: Sequence[StepMetrics]) -> str:
    """The trainer-vs-rollout |Δ logp| of every step merged, by harness, weight-version lag and turn."""
    from polar_hpc.train.grpo.mismatch import AXES, merge, ordered

    total = merge(m.mismatch for m in steps)
    if not any(total.axis(a) for a in AXES):
        return ""
    what = {"harness": "harness", "lag": "lag (trainer version - sampling version)",
            "turn": "turn (call of the session)"}
    lines = ["", "### Trainer-vs-rollout mismatch over the run", ""]
    for a in AXES:
        b = total.axis(a)
        lines += [f"| {what[a]} | tokens | mean abs Δlogp | max | masked | clipped |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {k} | {x.tokens} | {x.mean_abs:.2e} | {x.max_abs:.2e} | {100 * x.masked / max(x.tokens, 1):.1f}% "
                  f"| {100 * x.clipped / max(x.tokens, 1):.1f}% |" for k, x in ((k, b[k]) for k in ordered(b))]
        lines.append("")
    return "\n".join(lines)


def _agreements(runs: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The sections of the runs' ``polar-hpc shards logprobs`` results, where one was written."""
    lines: list[str] = []
    for run in runs:
        path = RunDir(run).logprobs_path
        if path.is_file():
            try:
                lines += agreement_markdown(msgspec.json.decode(path.read_bytes(), type=AgreementReport))
            except msgspec.DecodeError as err:
                lines += ["## Trainer-vs-rollout logprobs", "", f"{path}: unreadable ({err})", ""]
    return lines


def write_report(runs: Sequence[str | os.PathLike[str]], out: Path, *, accept: float = ACCEPT_REWARD,
                 plots: bool = True, allow_empty: bool = False) -> str:
    """Write ``report.md``, ``report.json`` and PNG plots under ``out``; returns the markdown.

    A missing run raises ``MissingShards``; runs without a session raise ``EmptySelection`` unless
    ``allow_empty``."""
    rows, problems = collect(runs, accept)
    if not rows and not allow_empty:
        raise EmptySelection(f"no sessions in {', '.join(map(str, runs))}"
                             + (f" ({'; '.join(problems)})" if problems else ""))
    rep = summarize(rows, [str(r) for r in runs], accept, problems)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    if plots and rows:
        from polar_hpc.report.plots import plot_report

        written = plot_report(rep, rows, out)
    steps = next((s for s in (read_steps(r) for r in runs) if s), [])
    if plots and steps:
        from polar_hpc.report.plots import plot_grpo_steps

        written.append(plot_grpo_steps(steps, out))
    text = render_markdown(rep, written) + "".join("\n" + line for line in _agreements(runs))
    text += grpo_section(steps)
    (out / "report.md").write_text(text)
    (out / "report.json").write_bytes(msgspec.json.format(msgspec.json.encode(rep)))
    return text
