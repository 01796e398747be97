"""The review page: one HTML document whose script labels run after run by keyboard.

Where it sits: served by ``judge.review.routes`` at ``/review``; everything it shows comes
from ``/review/api`` (the cards are the explain view's pieces, ``judge.review.card``).

Keys: ``y`` / ``n`` answer *attempted?* then *succeeded?* (a run not attempted did not
succeed: that question is skipped); a failure opens the class search (type to filter the
taxonomy by name and description, ``↑`` / ``↓`` to move, ``Enter`` to take it; ``Enter``
with nothing typed: no class); then the note (``Enter`` saves). ``Esc`` goes back one
step, ``s`` skips the run, ``u`` undoes the last label (the run comes back to be labelled
again). The page holds the next two cards before they are needed, so saving shows the
next run at once, while the label is written in the background; a label the server
refuses brings its run back with the reason. The bar shows the session's labels and
labels per hour (over the session so far, counted over at least a minute). Nothing of one
run carries to the next (answers, the class search, its list and highlight). An empty queue
says why, as the server counts it (``POST /review/api/queue``, :mod:`judge.review.queue`).

Layout: two columns from 900 px (the run's head, the frames with the end state first, and
beside them the form, the models and the gripper plots); below, one column in the order
head, form, frames, models, plots. At 1280 × 800 the end state is on screen without
scrolling, and at 600 px nothing is wider than the window (tests/browser/
test_review_page_layout.py).
"""

from __future__ import annotations

import html

from judge.explain import CSS as EXPLAIN_CSS

CSS = """
body{margin:0} #bar{position:sticky;top:0;background:#f6f8fa;border-bottom:1px solid #d0d7de;
  padding:6px 16px;display:flex;flex-wrap:wrap;gap:4px 16px;align-items:baseline;z-index:2}
#bar .status{color:#57606a;overflow-wrap:anywhere} #bar .status.bad{color:#cf222e}
#main{padding:8px 16px}
#card:not([hidden]){display:flex;gap:16px}
#left{flex:1 1 58%;min-width:0} #right{flex:1 1 42%;min-width:0}
h1{font-size:17px;margin:4px 0} h2{font-size:14px;margin:10px 0 4px} h4{margin:2px 0;font-size:13px}
#head .meta{margin:2px 0}
#why{background:#ddf4ff;border-radius:4px;padding:4px 8px;margin:4px 0;overflow-wrap:anywhere}
#frames{display:flex;flex-wrap:wrap;gap:8px}
.moment{border:1px solid #d0d7de;border-radius:4px;padding:4px;min-width:0;max-width:100%}
.moment[data-kind=end]{border-color:#8250df}
.moment .cam{display:block;padding-bottom:2px}
.moment .row{display:flex;flex-wrap:wrap;gap:4px}
.camname{font:11px ui-monospace,monospace;color:#57606a;overflow-wrap:anywhere}
.frame img{max-width:100%;height:auto}
.scroll{max-width:100%;overflow-x:auto}
#models{font-size:12px} #models td,#models th{padding:2px 6px}
#form{border:2px solid #d0d7de;border-radius:6px;padding:6px 10px;margin-bottom:8px}
.step{padding:3px 0;color:#8c959f} .step.active{color:#24292f;font-weight:600}
.step.done{color:#57606a} .step .val{margin-left:6px;font-weight:600}
kbd{border:1px solid #d0d7de;border-bottom-width:2px;border-radius:3px;padding:0 4px;
  font:12px ui-monospace,monospace;background:#fff}
#class,#note{width:100%;max-width:28em;font:14px system-ui,sans-serif;padding:2px 4px}
.hint{color:#57606a;font-size:12px;font-weight:400}
#classes{margin:4px 0 0;padding-left:0;list-style:none;max-height:220px;overflow:auto}
#classes li{padding:1px 4px;font-size:12px;color:#57606a;overflow-wrap:anywhere}
#classes li code{color:#24292f}
#classes li.hi{background:#0969da;color:#fff} #classes li.hi code{color:#fff}
.keys{color:#57606a;font-size:12px;margin:4px 0} #empty{padding:24px;overflow-wrap:anywhere}
#keyform{padding:24px} #key{width:100%;max-width:28em}
figure.plotbox{max-width:100%}
@media (max-width:900px){#card:not([hidden]){flex-direction:column;gap:6px} #main{padding:8px}
  #bar{padding:6px 8px} #left,#right{display:contents}
  #head{order:1} #why{order:2} #form{order:3} .keys{order:4} #frames{order:5}
  #judgment{order:6} #plots{order:7}}
"""

SCRIPT = r"""
const B = document.body, AUTH = B.dataset.auth, QS = new URLSearchParams(location.search);
const $ = id => document.getElementById(id);
const S = {judge: B.dataset.judge || QS.get('judge'), strategy: QS.get('strategy') || 'committee',
  n: Number(QS.get('n')) || null,
  key: sessionStorage.getItem('rcjudge-key'), cur: null, buffer: [], seen: new Set(),
  history: [], fetching: null, exhausted: false, step: null, ans: {}, classes: [],
  matches: [], hi: -1, started: null, skipped: 0};

function headers() {
  const h = {'Content-Type': 'application/json'};
  if (AUTH === 'key') h['Authorization'] = 'Bearer ' + S.key;
  return h;
}
async function call(method, path, body) {
  const r = await fetch(path, {method, headers: headers(),
                               body: body === undefined ? undefined : JSON.stringify(body)});
  const doc = await r.json();
  if (!r.ok) {
    const e = new Error(doc.detail || r.statusText); e.status = r.status; e.doc = doc; throw e;
  }
  return doc;
}
function flash(text, bad) {
  $('status').textContent = text; $('status').classList.toggle('bad', !!bad);
}

function stats() {
  // labels per hour over the session so far, counted over at least one minute
  const n = S.history.length, hours = S.started ? (Date.now() - S.started) / 3.6e6 : 0;
  const rate = Math.round(n / Math.max(hours, 1 / 60));
  $('stats').textContent = `${n} label${n === 1 ? '' : 's'} · ${rate} /h · ${S.skipped} skipped`;
  $('stats').dataset.labels = n;
  B.dataset.buffered = S.buffer.length;
}
setInterval(stats, 1000);

async function fetchOne() {
  const doc = await call('POST', '/review/api/next',
                         {judge_version: S.judge, strategy: S.strategy, exclude: [...S.seen],
                          ...(S.n ? {n: S.n} : {})});
  if (!doc.card) { S.exhausted = true; return null; }
  S.seen.add(doc.card.run_id);
  return doc.card;
}
async function fillLoop() {
  while (!S.exhausted && S.buffer.length < 2) {
    try {
      const card = await fetchOne();
      if (card) S.buffer.push(card);
    } catch (e) {
      if (e.doc && e.doc.run_id) { S.seen.add(e.doc.run_id); flash(e.message, true); continue; }
      flash(e.message, true); break;
    }
    if (!S.cur) advance();
    stats();
  }
  if (!S.cur) advance();
}
function fill() {
  if (!S.fetching) S.fetching = fillLoop().finally(() => { S.fetching = null; stats(); });
  return S.fetching;
}

function show(card) {
  S.cur = card; S.ans = {};
  const c = $('card');
  c.hidden = false; $('empty').hidden = true;
  c.dataset.runId = card.run_id;
  $('head').innerHTML = card.head;
  const p = card.pick;
  $('why').textContent =
    `#${p.rank} of the ${p.strategy} queue (score ${p.score.toFixed(4)}): ${p.reason}`;
  $('frames').innerHTML = card.frames;
  $('judgment').innerHTML = card.judgment;
  $('plots').innerHTML = card.plots;
  // nothing of the run before carries over: answers, search, its class list and highlight
  $('class').value = ''; $('note').value = '';
  S.matches = []; S.hi = -1; drawClasses();
  for (const v of ['attempt', 'success', 'class']) $('v-' + v).textContent = '';
  if (!S.started) S.started = Date.now();
  step('attempt'); stats(); fill();
}
function advance() {
  if (S.buffer.length) return show(S.buffer.shift());
  S.cur = null; $('card').hidden = true;
  const e = $('empty'); e.hidden = false;
  e.textContent = S.exhausted ? 'The queue is empty.' : 'Loading the next run…';
  if (S.exhausted) why();
  step(null);
}
async function why() {
  // the server counts why nothing is left (judge.review.queue): no runs visible, none
  // judged by this version, all labelled, the rest held out, or all shown here already
  try {
    const doc = await call('POST', '/review/api/queue',
                           {judge_version: S.judge, strategy: S.strategy, exclude: [...S.seen]});
    if (!S.cur) { $('empty').textContent = doc.detail; $('empty').dataset.reason = doc.reason; }
  } catch (e) { flash(e.message, true); }
}

function step(name) {
  S.step = name; B.dataset.step = name || '';
  const order = ['attempt', 'success', 'class', 'note'];
  for (const el of document.querySelectorAll('.step')) {
    const i = order.indexOf(el.dataset.step), j = order.indexOf(name);
    el.classList.toggle('active', el.dataset.step === name);
    el.classList.toggle('done', j >= 0 && i < j);
  }
  if (name === 'class') { $('class').focus(); search(); }
  else if (name === 'note') $('note').focus();
  else if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
}
function yesno(b) { return b ? 'yes' : 'no'; }
function answer(yes) {
  if (S.step === 'attempt') {
    S.ans.attempt = yes; $('v-attempt').textContent = yesno(yes);
    if (yes) return step('success');
    S.ans.success = false; $('v-success').textContent = 'no (not attempted)';
    return step('class');
  }
  S.ans.success = yes; $('v-success').textContent = yesno(yes);
  if (yes) { S.ans.failure_class = null; $('v-class').textContent = '—'; return step('note'); }
  step('class');
}
function back() {
  if (S.step === 'note') return step(S.ans.success ? 'success' : 'class');
  if (S.step === 'class') return step(S.ans.attempt ? 'success' : 'attempt');
  if (S.step === 'success') step('attempt');
}

function search() {
  const q = $('class').value.trim().toLowerCase(), words = q.split(/\s+/).filter(Boolean);
  const rank = ([name, desc]) => name.startsWith(q) ? 0 : name.includes(q) ? 1 : 2;
  S.matches = S.classes.filter(([name, desc]) =>
    words.every(w => name.toLowerCase().includes(w) || desc.toLowerCase().includes(w)))
    .sort((a, b) => rank(a) - rank(b));
  S.hi = q && S.matches.length ? 0 : -1;
  drawClasses();
}
function drawClasses() {
  const ol = $('classes'); ol.innerHTML = '';
  S.matches.slice(0, 12).forEach(([name, desc], i) => {
    const li = document.createElement('li');
    li.dataset.class = name; li.className = i === S.hi ? 'hi' : '';
    li.innerHTML = '<code></code> '; li.firstChild.textContent = name;
    li.append(desc);
    li.onmousedown = ev => { ev.preventDefault(); takeClass(name); };
    ol.append(li);
  });
}
function takeClass(name) {
  S.ans.failure_class = name; $('v-class').textContent = name || 'none';
  step('note');
}

function submit() {
  const card = S.cur, note = $('note').value.trim();
  const body = {run_id: card.run_id, judge_version: S.judge, pick: card.pick,
                attempt: S.ans.attempt, success: S.ans.success,
                failure_class: S.ans.failure_class || null, note: note || null};
  const entry = {card, body, label: null};
  entry.saved = call('POST', '/review/api/labels', body).then(label => {
    entry.label = label; flash(`saved ${label.run_id}`);
  }).catch(e => {
    S.history = S.history.filter(x => x !== entry);
    if (S.cur) S.buffer.unshift(S.cur);
    show(card); flash(`not saved (${card.run_id}): ${e.message}`, true);
  });
  S.history.push(entry);
  advance(); stats();
}
function skip() {
  if (!S.cur) return;
  S.skipped += 1; flash(`skipped ${S.cur.run_id}`); advance(); stats();
}
async function undo() {
  const entry = S.history[S.history.length - 1];
  if (!entry) return flash('nothing to undo');
  await entry.saved;
  if (!entry.label) return;
  try {
    await call('DELETE', '/review/api/labels/' + entry.label.label_id);
  } catch (e) { return flash(`undo failed: ${e.message}`, true); }
  S.history = S.history.filter(x => x !== entry);
  if (S.cur) S.buffer.unshift(S.cur);
  show(entry.card); flash(`undone: ${entry.card.run_id}`);
}

document.addEventListener('keydown', ev => {
  if (!$('keyform').hidden || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const k = ev.key;
  if (S.step === 'class') {
    if (k === 'ArrowDown' || k === 'ArrowUp') {
      const n = Math.min(S.matches.length, 12);
      if (n) S.hi = S.hi < 0 ? (k === 'ArrowDown' ? 0 : n - 1)
                             : (S.hi + (k === 'ArrowDown' ? 1 : n - 1)) % n;
      drawClasses(); ev.preventDefault();
    } else if (k === 'Enter') {
      ev.preventDefault();
      if (S.hi >= 0) takeClass(S.matches[S.hi][0]);
      else if (!$('class').value.trim()) takeClass(null);
      else flash('no class matches; Esc to go back, or clear the search for none');
    } else if (k === 'Escape') { ev.preventDefault(); back(); }
    return;
  }
  if (S.step === 'note') {
    if (k === 'Enter') { ev.preventDefault(); submit(); }
    else if (k === 'Escape') { ev.preventDefault(); back(); }
    return;
  }
  if (k === 'u') { ev.preventDefault(); return undo(); }
  if (!S.cur) return;
  if (k === 'y' || k === 'n') { ev.preventDefault(); answer(k === 'y'); }
  else if (k === 's') { ev.preventDefault(); skip(); }
  else if (k === 'Escape') { ev.preventDefault(); back(); }
});
$('class').addEventListener('input', search);

async function start() {
  if (AUTH === 'key' && !S.key) {
    $('keyform').hidden = false; $('main').hidden = true; $('key').focus(); return;
  }
  $('keyform').hidden = true; $('main').hidden = false;
  let session;
  try {
    session = await call('GET', '/review/api/session' +
                         (S.judge ? '?judge=' + encodeURIComponent(S.judge) : ''));
  } catch (e) {
    flash(e.message, true);
    if (e.status === 401 || e.status === 403) {
      sessionStorage.removeItem('rcjudge-key'); S.key = null;
      $('keyform').hidden = false; $('main').hidden = true; $('key').focus();
    }
    return;
  }
  S.judge = session.judge_version; S.classes = session.classes;
  $('who').textContent = session.labeled_by; $('judge').textContent = S.judge;
  $('strategy').textContent = S.strategy;
  advance(); fill();
}
$('key').addEventListener('keydown', ev => {
  if (ev.key !== 'Enter') return;
  S.key = $('key').value.trim(); sessionStorage.setItem('rcjudge-key', S.key); start();
});
start();
"""


def page(auth: str, judge_version: str | None) -> str:
    """The page; ``auth``: ``key`` (ask for an API key) or ``operator`` (none);
    ``judge_version``: the version it labels, None to take ``?judge=`` from its URL."""
    judge = html.escape(judge_version or "", quote=True)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rcjudge review</title><style>{EXPLAIN_CSS}{CSS}</style></head>
<body data-auth="{html.escape(auth, quote=True)}" data-judge="{judge}">
<div id="bar"><b>rcjudge review</b><span>labeller <b id="who"></b></span>
<span>queue <code id="judge"></code> · <span id="strategy"></span></span>
<span id="stats" data-labels="0">0 labels</span><span id="status" class="status"></span></div>
<div id="keyform" hidden><label>API key with <code>labels:write</code>:
<input id="key" type="password" autocomplete="off"></label> <kbd>Enter</kbd></div>
<div id="main"><div id="empty">Loading…</div>
<div id="card" hidden><div id="left"><div id="head"></div><div id="why"></div>
<div id="frames"></div></div>
<div id="right"><div id="form">
<div class="step" data-step="attempt">Attempted? <kbd>y</kbd> / <kbd>n</kbd>
<span class="val" id="v-attempt"></span></div>
<div class="step" data-step="success">Succeeded? <kbd>y</kbd> / <kbd>n</kbd>
<span class="val" id="v-success"></span></div>
<div class="step" data-step="class">Failure class <span class="val" id="v-class"></span><br>
<input id="class" autocomplete="off" placeholder="search the taxonomy">
<div class="hint">type to filter · <kbd>↑</kbd> <kbd>↓</kbd> · <kbd>Enter</kbd> takes it;
<kbd>Enter</kbd> with nothing typed: no class</div>
<ol id="classes"></ol></div>
<div class="step" data-step="note">Note <span class="hint">optional; <kbd>Enter</kbd> saves
the label</span><br><input id="note" autocomplete="off"></div></div>
<p class="keys"><kbd>Esc</kbd> back · <kbd>s</kbd> skip · <kbd>u</kbd> undo the last label</p>
<div id="judgment"></div><div id="plots"></div></div></div></div>
<script>{SCRIPT}</script></body></html>"""
