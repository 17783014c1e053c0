"""The viewer's stylesheet and scripts (written once per site as ``viewer.css`` / ``viewer.js``; no network)."""

CSS = """
:root { --fg: #1d2430; --dim: #6b7686; --line: #d9dee5; --ok: #1a7f37; --bad: #b42318; --train: #c8f0d2;
        --ins: #eef1f5; --prompt: #f7f7f9; --accent: #2f5fb3; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); margin: 0 auto; max-width: 1200px; padding: 16px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 24px 0 8px; }
a { color: var(--accent); }
.meta { color: var(--dim); } .ok { color: var(--ok); } .bad { color: var(--bad); }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f8; position: sticky; top: 0; cursor: pointer; user-select: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.filters { display: flex; gap: 8px; flex-wrap: wrap; margin: 12px 0; align-items: center; }
.filters input, .filters select { padding: 4px 6px; font: inherit; }
.msg { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
.msg .role { font-weight: 600; font-size: 12px; color: var(--dim); }
.msg.assistant { border-left: 4px solid var(--accent); } .msg.tool { border-left: 4px solid #9a6700; }
.msg.system { background: #fafbfc; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; font: 12.5px/1.4 ui-monospace, monospace; }
.reasoning { color: var(--dim); font-style: italic; }
.call { background: #eef4ff; border-radius: 4px; padding: 4px 6px; margin: 4px 0; }
.tokens { font: 12.5px/1.7 ui-monospace, monospace; white-space: pre-wrap; word-break: break-all;
          border: 1px solid var(--line); padding: 8px; max-height: 480px; overflow: auto; }
.tok.p { background: var(--prompt); color: var(--dim); } .tok.s { background: var(--train); }
.tok.i { background: var(--ins); color: var(--dim); }
.seg { display: inline-block; font: 11px system-ui; color: #fff; background: var(--dim); border-radius: 3px;
       padding: 0 4px; margin: 0 2px; } .seg.s { background: var(--ok); }
.chain { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; margin: 12px 0; }
.legend span { padding: 0 6px; margin-right: 6px; }
.plots img { max-width: 48%; border: 1px solid var(--line); margin: 4px; }
.bar { display: inline-block; height: 10px; background: var(--accent); vertical-align: middle; }
"""

JS = """
function runFilter() {
  const q = document.getElementById('q').value.toLowerCase();
  const st = document.getElementById('status').value, h = document.getElementById('harness').value;
  const acc = document.getElementById('accepted').value;
  const minr = parseFloat(document.getElementById('minreward').value);
  let shown = 0;
  const rows = document.querySelectorAll('#sessions tbody tr');
  rows.forEach(tr => {
    const d = tr.dataset;
    const ok = (!q || tr.textContent.toLowerCase().includes(q)) && (!st || d.status === st) &&
      (!h || d.harness === h) && (!acc || d.accepted === acc) &&
      (isNaN(minr) || parseFloat(d.reward) >= minr);
    tr.hidden = !ok; if (ok) shown++;
  });
  document.getElementById('shown').textContent = shown + ' of ' + rows.length + ' sessions';
}
function sortBy(th) {
  const table = th.closest('table'), body = table.tBodies[0], i = th.cellIndex;
  const dir = th.dataset.dir === 'asc' ? -1 : 1; th.dataset.dir = dir === 1 ? 'asc' : 'desc';
  const num = th.classList.contains('num');
  const key = tr => { const c = tr.cells[i]; const v = c.dataset.v ?? c.textContent; return num ? parseFloat(v) : v; };
  [...body.rows].sort((a, b) => (key(a) > key(b) ? 1 : key(a) < key(b) ? -1 : 0) * dir)
    .forEach(tr => body.appendChild(tr));
}
function renderTokens() {
  const data = JSON.parse(document.getElementById('session-data').textContent);
  const vocab = data.vocab || {};
  document.querySelectorAll('.tokens[data-trace]').forEach(box => {
    const t = data.traces[+box.dataset.trace];
    const frag = document.createDocumentFragment();
    for (const [kind, a, b] of t.segments) {
      const label = document.createElement('span');
      label.className = 'seg' + (kind === 'sampled' ? ' s' : '');
      label.textContent = kind + ' ' + (b - a);
      frag.appendChild(label);
      for (let j = a; j < b; j++) {
        const s = document.createElement('span');
        const id = t.ids[j], lp = t.logprobs[j];
        s.className = 'tok ' + (kind === 'prompt' ? 'p' : t.trainable[j] ? 's' : 'i');
        s.textContent = id in vocab ? vocab[id] : '\\u2039' + id + '\\u203a';
        s.title = 'id ' + id + (lp === null ? '' : ' \\u00b7 logprob ' + lp.toFixed(4) +
                  ' \\u00b7 p ' + Math.exp(lp).toFixed(3)) + (t.trainable[j] ? ' \\u00b7 trainable' : '');
        frag.appendChild(s);
      }
    }
    box.textContent = ''; box.appendChild(frag);
    box.dataset.rendered = String(t.ids.length);
  });
}
document.addEventListener('DOMContentLoaded', () => {
  if (document.getElementById('sessions')) {
    document.querySelectorAll('.filters input, .filters select').forEach(e => e.addEventListener('input', runFilter));
    document.querySelectorAll('#sessions th').forEach(th => th.addEventListener('click', () => sortBy(th)));
    const params = new URLSearchParams(location.search);
    for (const [k, v] of params) { const e = document.getElementById(k); if (e) e.value = v; }
    runFilter();
  }
  if (document.getElementById('session-data')) renderTokens();
});
"""
