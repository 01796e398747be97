"""CSS and script of the verdict screen, inlined into the page (nothing is fetched).

Widths: two columns (the cards, the 14-check panel) from 900 px; below, one column with
the panel after the cards, so nothing is wider than the window (600 px included) and a
task id wraps rather than being cut. The gloss toggle (``#gloss-toggle``) shows the
English glosses (``.en``) under the Korean words; its state is remembered in
``localStorage`` (``rcjudge-verdict-gloss``), on by default unless the browser's language
is Korean.
"""

from __future__ import annotations

CSS = """
:root { --ok:#0a7d32; --bad:#b3261e; --muted:#5f6368; --line:#dadce0; --warn:#b06000; }
* { box-sizing: border-box; }
body { margin:0; font-family:"Noto Sans CJK KR","NanumGothic","Malgun Gothic",
  "Apple SD Gothic Neo",sans-serif; color:#202124; background:#fafafa; }
header { padding:16px 24px; background:#fff; border-bottom:1px solid var(--line); }
header .top { display:flex; gap:12px; align-items:flex-start; justify-content:space-between; }
h1 { font-size:20px; margin:0 0 6px; } h2 { font-size:17px; margin:18px 0 8px; }
h3 { font-size:15px; margin:12px 0 6px; color:var(--muted); }
.meta, small, .note { color:var(--muted); font-size:13px; }
#self-grade { margin-top:8px; font-size:14px; }
#self-grade-figure { font-weight:700; min-width:3em; display:inline-block; }
.layout { display:grid; grid-template-columns:minmax(0,1fr) 380px; gap:16px; padding:16px 24px; }
main { min-width:0; }
aside { position:sticky; top:8px; align-self:start; max-height:96vh; overflow:auto;
  background:#fff; border:1px solid var(--line); border-radius:8px; padding:8px 14px; }
nav button, #gloss-toggle { font:inherit; padding:6px 14px; border:1px solid var(--line);
  background:#fff; border-radius:16px; cursor:pointer; margin-right:6px; }
nav button[aria-selected="true"], #gloss-toggle[aria-pressed="true"] { background:#1a73e8;
  color:#fff; border-color:#1a73e8; }
#gloss-toggle { flex:none; margin:0; }
nav button[aria-selected="true"] .en { color:#e8f0fe; }
table.values th { white-space:nowrap; overflow-wrap:normal; }
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
.task { font-family:ui-monospace,monospace; overflow-wrap:anywhere; }
.sum, td, th, h1, h2, h3, p, li { overflow-wrap:anywhere; }
.missing, .missing-badge { color:var(--bad); }
.missing-badge { font-size:12px; border:1px solid var(--bad); border-radius:10px; padding:0 6px; }
.rect { font-size:12px; border:1px solid #1a73e8; color:#174ea6; border-radius:10px;
  padding:0 6px; white-space:nowrap; }
.flip { font-size:12px; color:var(--warn); font-weight:700; }
details.card[data-flip] { border-left:4px solid var(--warn); padding-left:8px; }
.rect-line { margin-top:4px; font-size:13px; }
.scroll { max-width:100%; overflow-x:auto; }
table { border-collapse:collapse; margin:8px 0; font-size:13px; }
th, td { border:1px solid var(--line); padding:3px 8px; text-align:left; vertical-align:top; }
th { background:#f1f3f4; }
.pass { color:var(--ok); font-weight:700; } .fail { color:var(--bad); font-weight:700; }
.na { color:var(--muted); }
ol.checks { padding-left:22px; font-size:13px; } ol.checks li { margin:3px 0; }
.notes { background:#fff; border:1px solid var(--line); border-radius:8px; padding:4px 14px;
  margin:0 24px 24px; font-size:14px; }
.notes section { margin-bottom:8px; }
.en { display:none; color:var(--muted); font-size:12px; font-weight:400; }
html.gloss .en { display:inline; margin-left:4px; }
html.gloss div.en, html.gloss .sum-en, html.gloss h1 .en { display:block; margin-left:0; }
html.gloss .label .en { color:#174ea6; }
@media (max-width:900px) {
  .layout { grid-template-columns:minmax(0,1fr); padding:12px; }
  aside { position:static; max-height:none; }
  header { padding:12px; } .notes { margin:0 12px 12px; }
}
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
(function () {
  var KEY = 'rcjudge-verdict-gloss', toggle = document.getElementById('gloss-toggle');
  var stored = null;
  try { stored = localStorage.getItem(KEY); } catch (e) { stored = null; }
  var on = stored === null ? !/^ko\\b/i.test(navigator.language || '') : stored === 'on';
  function show(value) {
    on = value;
    document.documentElement.classList.toggle('gloss', on);
    toggle.setAttribute('aria-pressed', on ? 'true' : 'false');
  }
  show(on);
  toggle.addEventListener('click', function () {
    show(!on);
    try { localStorage.setItem(KEY, on ? 'on' : 'off'); } catch (e) { /* private mode */ }
  });
})();
"""
