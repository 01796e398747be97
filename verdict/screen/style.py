"""CSS and script of the verdict screen, inlined into the page (nothing is fetched)."""

from __future__ import annotations

CSS = """
:root { --ok:#0a7d32; --bad:#b3261e; --muted:#5f6368; --line:#dadce0; }
* { box-sizing: border-box; }
body { margin:0; font-family:"Noto Sans CJK KR","NanumGothic","Malgun Gothic",
  "Apple SD Gothic Neo",sans-serif; color:#202124; background:#fafafa; }
header { padding:16px 24px; background:#fff; border-bottom:1px solid var(--line); }
h1 { font-size:20px; margin:0 0 6px; } h2 { font-size:17px; margin:18px 0 8px; }
h3 { font-size:15px; margin:12px 0 6px; color:var(--muted); }
.meta, small, .note { color:var(--muted); font-size:13px; }
#self-grade { margin-top:8px; font-size:14px; }
#self-grade-figure { font-weight:700; min-width:3em; display:inline-block; }
.layout { display:grid; grid-template-columns:minmax(0,1fr) 380px; gap:16px; padding:16px 24px; }
aside { position:sticky; top:8px; align-self:start; max-height:96vh; overflow:auto;
  background:#fff; border:1px solid var(--line); border-radius:8px; padding:8px 14px; }
nav button { font:inherit; padding:6px 14px; border:1px solid var(--line); background:#fff;
  border-radius:16px; cursor:pointer; margin-right:6px; }
nav button[aria-selected="true"] { background:#1a73e8; color:#fff; border-color:#1a73e8; }
.group { background:#fff; border:1px solid var(--line); border-radius:8px; padding:4px 14px 10px;
  margin-bottom:12px; }
.cause { border-left:4px solid var(--line); padding-left:10px; margin:8px 0; }
.cause[data-cause="능력 불일치"] { border-color:#e37400; }
.cause[data-cause="평가 미실시"] { border-color:#8430ce; }
details.card { border-top:1px solid #eee; padding:6px 0; }
details.card > summary { cursor:pointer; list-style:none; line-height:1.5; }
details.card > summary::-webkit-details-marker { display:none; }
details.card > summary::before { content:"▸ "; color:var(--muted); }
details.card[open] > summary::before { content:"▾ "; }
.label { display:inline-block; font-size:12px; padding:1px 8px; border-radius:10px;
  background:#e8f0fe; color:#174ea6; }
.task { font-family:ui-monospace,monospace; }
.missing, .missing-badge { color:var(--bad); }
.missing-badge { font-size:12px; border:1px solid var(--bad); border-radius:10px; padding:0 6px; }
table { border-collapse:collapse; margin:8px 0; font-size:13px; }
th, td { border:1px solid var(--line); padding:3px 8px; text-align:left; vertical-align:top; }
th { background:#f1f3f4; }
.pass { color:var(--ok); font-weight:700; } .fail { color:var(--bad); font-weight:700; }
.na { color:var(--muted); }
ol.checks { padding-left:22px; font-size:13px; } ol.checks li { margin:3px 0; }
.notes { background:#fff; border:1px solid var(--line); border-radius:8px; padding:4px 14px;
  margin:0 24px 24px; font-size:14px; }
.notes section { margin-bottom:8px; }
"""

SCRIPT = """
document.querySelectorAll('nav button[data-view]').forEach(function (b) {
  b.addEventListener('click', function () {
    document.querySelectorAll('nav button[data-view]').forEach(function (o) {
      o.setAttribute('aria-selected', o === b ? 'true' : 'false');
    });
    document.querySelectorAll('[data-round]').forEach(function (s) {
      s.hidden = s.getAttribute('data-round') !== b.getAttribute('data-view');
    });
  });
});
"""
