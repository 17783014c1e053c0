from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.view.model import page_name
from polar_hpc.view.site import write_site
from polar_hpc.wire.calls import ChatMessage
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.runs import write_run


@pytest.fixture
def results(session_result_factory: Any) -> list[SessionResult]:
    rs = [session_result_factory(task_id=f"t{i}", status=TraceStatus.COMPLETED, reward=float(i % 2), traces=2)
          for i in range(5)]
    rs[0].trajectory.traces[0].prompt_messages[1] = ChatMessage(role="user", content="<script>alert(1)</script>")
    rs[2].trajectory.status = TraceStatus.TIMEOUT
    rs[2].trajectory.error = "agent timed out after 1200 s"
    rs[2].trajectory.traces[1].policy = "oracle"
    meta = rs[2].trajectory.traces[1].meta
    meta.chain_index, meta.parent_chain, meta.break_reason, meta.retokenized_tokens = 1, 0, "retokenized", 3
    return rs


def test_site_pages(tmp_path: Path, results: list[SessionResult]) -> None:
    run = write_run(tmp_path / "run", results)
    stats = write_site(run, tmp_path / "site", report=False)
    assert stats.sessions == 5 and stats.pages == 6
    index = (tmp_path / "site/index.html").read_text()
    assert index.count("<tr data-status=") == 5 and "timeout: agent timed out after 1200 s" in index
    timeout_page = (tmp_path / "site/sessions" / page_name("t2/0")).read_text()
    assert ("break_reason <b>retokenized</b>" in timeout_page and '<b class="policy">oracle</b>' in timeout_page
            and "parent_chain <b>0</b>" in timeout_page)
    page = (tmp_path / "site/sessions" / page_name("t0/0")).read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    data = json.loads(page.split('id="session-data">')[1].split("</script>")[0])
    n_prompt = len(results[0].trajectory.traces[0].prompt_ids)
    assert len(data["traces"]) == 2 and data["traces"][0]["segments"][0] == ["prompt", 0, n_prompt]
    t = results[0].trajectory.traces[0]
    assert data["traces"][0]["ids"] == t.prompt_ids.tolist() + t.response_ids.tolist()
    assert sum(data["traces"][0]["trainable"]) == int(t.loss_mask.sum())


def test_view_cli_one_session_and_errors(tmp_path: Path, results: list[SessionResult],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", results)
    assert main(["view", str(run), "--session", "t3/0", "--out", str(tmp_path / "one")]) == 0
    assert [p.name for p in (tmp_path / "one/sessions").iterdir()] == [page_name("t3/0")]
    assert main(["view", str(run), "--session", "t9/0", "--out", str(tmp_path / "x")]) == 1
    assert "no session 't9/0'" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "typo")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_shards_show_prints_the_session(tmp_path: Path, results: list[SessionResult],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", results)
    assert main(["shards", "show", "t2/0", str(run)]) == 0
    out = capsys.readouterr().out
    assert "session t2/0" in out and "not accepted: timeout: agent timed out after 1200 s" in out
    assert out.count("── chain ") == 2 and "→ bash" in out and "tokens: prompt " in out and "\033[" not in out
    assert "── timings\ninit " in out
    assert "── chain 1  (chain_index 1, parent_chain 0, break_reason retokenized, retokenized_tokens 3)  oracle" in out
    assert main(["shards", "show", "nope/0", str(run)]) == 1
    assert "no session 'nope/0'" in capsys.readouterr().err
    assert main(["shards", "show", "t2/0", str(tmp_path / "typo")]) == 2


def test_shards_inspect_and_export_fail_loudly(tmp_path: Path, results: list[SessionResult],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", results)
    assert main(["shards", "inspect", str(tmp_path / "typo")]) == 2
    assert "typo" in capsys.readouterr().err
    assert main(["shards", "inspect", str(run), "--min-reward", "7"]) == 1
    assert "matches the filter min_reward=7" in capsys.readouterr().err
    assert main(["shards", "inspect", str(run), "--min-reward", "7", "--allow-empty"]) == 0
    assert main(["shards", "inspect", str(run), "--status", "TIMEOUT"]) == 0  # the names the CLI prints
    assert main(["shards", "export", str(run), "--harness", "nobody", "--out", str(tmp_path / "x.jsonl")]) == 1
    assert "harness=nobody" in capsys.readouterr().err
