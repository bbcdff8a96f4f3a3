/**
 * The dashboard served at `GET /`: one self-contained HTML page (inline CSS and JS, no external
 * assets, nothing to build) that polls `GET /stats` every few seconds and shows, from it alone,
 * the totals (in money when the proxy has prices), a chart of the cache-hit ratio and the tokens
 * saved over time with a mark where a client broke the cache, the sessions by name, and the
 * latest results. Times are the viewer's, in the browser's time zone.
 *
 * When `/stats` answers 401 the page asks for the proxy's shared secret (`x-lembas-auth`) and
 * keeps it in `sessionStorage` for the tab's lifetime.
 * @example app.get('/', (c) => c.html(dashboardHtml()))
 */
export function dashboardHtml(): string {
  return PAGE
}

/** How often the page polls `/stats`, in milliseconds. */
export const DASHBOARD_POLL_MS = 3000

const CSS = `
:root {
  color-scheme: light dark;
  --bg: #f6f7f9; --panel: #ffffff; --text: #1c2330; --muted: #5d6778; --line: #dfe3ea;
  --accent: #2f6fdb; --accent2: #1f9d6b; --warn-bg: #fff4e0; --warn: #8a5300; --err-bg: #fde8e8; --err: #9b1c1c;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #12151b; --panel: #1b2029; --text: #e4e8ef; --muted: #98a2b3; --line: #2c3340;
    --accent: #6ea2ff; --accent2: #4cd19a; --warn-bg: #3a2c12; --warn: #f3c46b; --err-bg: #3b1d1d; --err: #f29b9b;
  }
}
* { box-sizing: border-box; }
body {
  margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
}
header {
  display: flex; align-items: center; gap: 16px; flex-wrap: wrap;
  padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--panel);
}
header h1 { font-size: 17px; margin: 0; font-weight: 650; }
header .status { color: var(--muted); font-size: 12px; flex: 1; }
header form { display: flex; gap: 6px; align-items: center; font-size: 12px; color: var(--muted); }
input, button {
  font: inherit; color: var(--text); background: var(--bg); border: 1px solid var(--line);
  border-radius: 6px; padding: 4px 8px;
}
button { cursor: pointer; background: var(--accent); border-color: var(--accent); color: var(--bg); }
main { padding: 20px 24px 40px; max-width: 1200px; margin: 0 auto; display: grid; gap: 20px; grid-template-columns: minmax(0, 1fr); }
@media (max-width: 600px) { main { padding: 12px 10px 24px; } header { padding: 10px 12px; } }
.banner { padding: 10px 14px; border-radius: 8px; font-weight: 500; }
.banner.warn { background: var(--warn-bg); color: var(--warn); }
.banner.err { background: var(--err-bg); color: var(--err); }
.totals { display: grid; grid-template-columns: repeat(auto-fit, minmax(130px, 1fr)); gap: 12px; }
.card { min-width: 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 24px; font-weight: 650; margin-top: 4px; font-variant-numeric: tabular-nums; }
.card .note { color: var(--muted); font-size: 12px; margin-top: 2px; }
[hidden] { display: none !important; }
section h2 { font-size: 14px; margin: 0 0 10px; font-weight: 650; }
.legend { display: flex; gap: 16px; font-size: 12px; color: var(--muted); margin-bottom: 6px; }
.legend i { display: inline-block; width: 12px; height: 3px; vertical-align: middle; margin-right: 6px; }
#chart { width: 100%; height: 220px; display: block; }
#chart text { fill: var(--muted); font-size: 11px; }
.empty { color: var(--muted); padding: 8px 0; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { color: var(--muted); font-weight: 600; font-size: 12px; }
td.num, th.num { text-align: right; }
/* Headings and words wrap, figures do not: a laptop sees every column of a session. */
th { white-space: normal; vertical-align: bottom; }
td.text { white-space: normal; min-width: 9em; max-width: 18em; overflow-wrap: anywhere; }
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.scroll { overflow-x: auto; }
/* A phone: each row a small card of labelled figures, so a session's savings show without
   scrolling sideways. The labels are the columns' headings (data-label, set with each cell). */
@media (max-width: 600px) {
  table.stack thead { display: none; }
  table.stack tr { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 4px 12px; padding: 10px 0; border-bottom: 1px solid var(--line); }
  table.stack td { border: 0; padding: 0; white-space: normal; overflow-wrap: anywhere; text-align: left; }
  table.stack td:first-child { grid-column: 1 / -1; font-weight: 600; }
  table.stack td:not(:first-child)::before { content: attr(data-label); display: block; color: var(--muted); font-size: 11px; }
}
`

const JS = `
(function () {
  'use strict';
  var POLL_MS = ${DASHBOARD_POLL_MS};
  var KEY = 'lembas-auth';
  var DASH = '\\u2013';
  var MAX_SAMPLES = 200;
  var samples = [];
  var ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';

  function $(id) { return document.getElementById(id); }
  function isNum(v) { return typeof v === 'number' && isFinite(v); }
  function fmtInt(v) { return isNum(v) ? Math.round(v).toLocaleString('en-US') : DASH; }
  function fmtPct(v) { return isNum(v) ? (v * 100).toFixed(1) + '%' : DASH; }
  function fmtMoney(v) {
    if (!isNum(v)) return DASH;
    var digits = Math.abs(v) < 1 ? 4 : 2;
    return (v < 0 ? '\\u2212$' : '$') + Math.abs(v).toFixed(digits);
  }
  function text(v) { return v === undefined || v === null || v === '' ? DASH : String(v); }
  function time(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? DASH : d.toLocaleTimeString(undefined, { hour12: false });
  }
  function dateTime(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? DASH : d.toLocaleString(undefined, { hour12: false, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  }

  function el(tag, cls, content) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined) e.textContent = content;
    return e;
  }
  /** A table row; each cell carries its column's heading for the phone layout. */
  function row(body, cells) {
    var heads = body.parentNode.tHead.rows[0].cells;
    var tr = document.createElement('tr');
    cells.forEach(function (c, i) {
      var td = el('td', c[1] || '', c[0]);
      if (c[2]) td.title = c[2];
      td.setAttribute('data-label', heads[i] ? heads[i].textContent : '');
      tr.appendChild(td);
    });
    body.appendChild(tr);
    return tr;
  }
  function banner(kind, message) {
    var b = $('banner');
    if (!message) { b.hidden = true; b.textContent = ''; return; }
    b.hidden = false; b.className = 'banner ' + kind; b.textContent = message;
  }
  function show(selector, visible) {
    document.querySelectorAll(selector).forEach(function (e) { e.hidden = !visible; });
  }
  /** A session as a person knows it: its first words, else its id. */
  function nameOf(s) { return s.title || s.session; }
  function breakText(b) {
    var where = b.field ? 'its ' + b.field : 'item ' + b.item + (b.role ? ' (' + b.role + ')' : '');
    return time(b.at) + ': the ' + b.by + ' changed ' + where + '; ' + fmtInt(b.tokens) + ' tokens billed again';
  }

  function renderMode(stats) {
    var observe = stats.observe === true;
    $('mode').hidden = !observe;
    document.querySelectorAll('[data-saved-label]').forEach(function (e) {
      e.textContent = (observe ? 'Would save' : 'Saved') + e.getAttribute('data-saved-label');
    });
  }

  function renderTotals(stats, sessions) {
    var t = stats.totals;
    $('t-sessions').textContent = fmtInt(sessions.length);
    $('t-requests').textContent = fmtInt(t.requests);
    $('t-input').textContent = fmtInt(t.promptTokens);
    $('t-saved').textContent = fmtInt(t.inputTokensSaved);
    $('t-money').textContent = fmtMoney(t.moneySaved);
    $('t-ratio').textContent = fmtPct(t.cachedRatio);
    $('t-recalls').textContent = fmtInt(t.recalls);
    $('t-breaks').textContent = fmtInt(t.clientBreaks);
    $('t-breaks-tokens').textContent = isNum(t.clientBreakTokens) && t.clientBreakTokens > 0
      ? fmtInt(t.clientBreakTokens) + ' tokens billed again' : '';
    return { ratio: t.cachedRatio, saved: t.inputTokensSaved };
  }

  function renderSessions(sessions) {
    var body = $('sessions-body');
    body.textContent = '';
    $('sessions-empty').hidden = sessions.length > 0;
    sessions.forEach(function (s) {
      var breaks = Array.isArray(s.breaks) ? s.breaks : [];
      var last = breaks.filter(function (b) { return b.by === 'client'; }).pop();
      var tr = row(body, [
        [nameOf(s), s.title ? 'text' : 'id text', s.session],
        [dateTime(s.firstSeen)],
        [[s.agent, s.model, s.door].filter(Boolean).join(' \\u00b7 ') || DASH, 'text'],
        [fmtInt(s.requests), 'num'],
        [fmtInt(s.promptTokens), 'num'],
        [fmtInt(s.inputTokensSaved), 'num'],
        [fmtMoney(s.moneySaved), 'num money'],
        [fmtPct(s.cachedRatio), 'num'],
        [fmtInt(s.recalls), 'num'],
        [fmtInt(s.clientBreaks), 'num', last ? breakText(last) : '']
      ]);
      tr.setAttribute('data-session', s.session);
    });
  }

  function renderResults(stats, names) {
    var body = $('results-body');
    body.textContent = '';
    var items = [];
    (Array.isArray(stats.recent) ? stats.recent : []).forEach(function (req) {
      (req.results || []).forEach(function (r) { items.push({ r: r, req: req }); });
    });
    items = items.slice(0, 50);
    $('results-empty').hidden = items.length > 0;
    items.forEach(function (item) {
      var r = item.r, req = item.req;
      row(body, [
        [text(r.id), 'id'],
        [text(r.kind)],
        [text(names[req.session] || req.session), '', req.session],
        [fmtInt(r.charsBefore), 'num'],
        [fmtInt(r.charsAfter), 'num'],
        [time(req.at)]
      ]);
    });
  }

  function renderChart(stats, now, breaks) {
    // The proxy's own series (10-second points of the last hour) and the figures now; a proxy
    // without one is sampled here, from when the page opened.
    var pts = (Array.isArray(stats.series) ? stats.series : []).map(function (p) {
      return { t: Date.parse(p.at), ratio: p.cachedRatio, saved: p.inputTokensSaved };
    });
    if (pts.length > 0) {
      pts.push({ t: Date.now(), ratio: now.ratio, saved: now.saved });
    } else {
      samples.push({ t: Date.now(), ratio: now.ratio, saved: now.saved });
      if (samples.length > MAX_SAMPLES) samples.shift();
      pts = samples;
    }
    drawn = { pts: pts, breaks: breaks };
    drawChart(pts, breaks);
  }

  // The chart is drawn in the svg's own pixels (readable text at any width), so a resize (a phone
  // turned, a window narrowed) draws it again from the same points.
  var drawn = null;
  window.addEventListener('resize', function () { if (drawn) drawChart(drawn.pts, drawn.breaks); });

  function drawChart(pts, breaks) {
    var svg = $('chart');
    var NS = 'http://www.w3.org/2000/svg';
    var W = svg.clientWidth || 800, H = svg.clientHeight || 220;
    var L = 44, R = 64, T = 10, B = 24;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.textContent = '';
    function add(tag, attrs, content) {
      var e = document.createElementNS(NS, tag);
      for (var k in attrs) e.setAttribute(k, String(attrs[k]));
      if (content !== undefined) e.textContent = content;
      svg.appendChild(e);
      return e;
    }
    var maxSaved = 0;
    pts.forEach(function (p) { if (isNum(p.saved) && p.saved > maxSaved) maxSaved = p.saved; });
    var hasSaved = maxSaved > 0;
    if (!hasSaved) maxSaved = 1;
    var css = getComputedStyle(document.documentElement);
    var grid = css.getPropertyValue('--line') || '#ccc';
    for (var i = 0; i <= 4; i++) {
      var y = T + (H - T - B) * (1 - i / 4);
      add('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: grid, 'stroke-width': 1 });
      add('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, (i * 25) + '%');
      if (hasSaved) add('text', { x: W - R + 6, y: y + 4 }, Math.round(maxSaved * i / 4).toLocaleString('en-US'));
    }
    var t0 = pts[0].t, t1 = pts[pts.length - 1].t;
    function x(t) { return t1 === t0 ? (L + (W - R)) / 2 : L + (W - R - L) * (t - t0) / (t1 - t0); }
    // A mark where a client broke the prompt cache; older breaks sit at the chart's start.
    breaks.forEach(function (b) {
      var t = Date.parse(b.at);
      if (!(t <= t1)) return;
      var xx = x(Math.max(t, t0));
      var mark = add('line', { x1: xx, x2: xx, y1: T, y2: H - B, stroke: css.getPropertyValue('--err').trim() || '#c00', 'stroke-width': 2, 'stroke-dasharray': '4 3', 'class': 'break-mark' });
      var title = document.createElementNS(NS, 'title');
      title.textContent = breakText(b);
      mark.appendChild(title);
    });
    function line(key, scale, color) {
      var d = '', dots = [];
      pts.forEach(function (p) {
        var v = p[key];
        if (!isNum(v)) return;
        var yy = T + (H - T - B) * (1 - Math.max(0, Math.min(1, v / scale)));
        d += (d === '' ? 'M' : 'L') + x(p.t).toFixed(1) + ' ' + yy.toFixed(1) + ' ';
        dots.push([x(p.t), yy]);
      });
      if (d !== '') add('path', { d: d, fill: 'none', stroke: color, 'stroke-width': 2, 'stroke-linejoin': 'round' });
      if (dots.length <= 30) dots.forEach(function (p) { add('circle', { cx: p[0], cy: p[1], r: 3, fill: color }); });
    }
    line('ratio', 1, css.getPropertyValue('--accent').trim() || '#2f6fdb');
    line('saved', maxSaved, css.getPropertyValue('--accent2').trim() || '#1f9d6b');
    add('text', { x: L, y: H - 6 }, time(new Date(t0).toISOString()));
    if (t1 !== t0) add('text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, time(new Date(t1).toISOString()));
  }

  function render(stats) {
    var sessions = Array.isArray(stats.sessions) ? stats.sessions : [];
    var names = {};
    var breaks = [];
    sessions.forEach(function (s) {
      names[s.session] = nameOf(s);
      (s.breaks || []).forEach(function (b) { if (b.by === 'client') breaks.push(b); });
    });
    renderMode(stats);
    var now = renderTotals(stats, sessions);
    renderSessions(sessions);
    renderResults(stats, names);
    renderChart(stats, now, breaks);
    var p = stats.prices;
    // Money only when the proxy was given a price (--price-per-mtok).
    show('.money', p !== null && p !== undefined);
    $('prices').textContent = p ? 'at $' + p.perMTok + ' per million input tokens, cached ' + Math.round(p.cachedDiscount * 100) + '% off' : '';
  }

  var timer = null;
  function schedule() { clearTimeout(timer); timer = setTimeout(poll, POLL_MS); }
  function poll() {
    var headers = { accept: 'application/json' };
    var secret = sessionStorage.getItem(KEY);
    if (secret) headers['x-lembas-auth'] = secret;
    fetch('stats', { headers: headers, cache: 'no-store' }).then(function (res) {
      if (res.status === 401 || res.status === 403) {
        banner('warn', secret
          ? 'The proxy refused the shared secret: enter the value of --auth (x-lembas-auth) above.'
          : 'This proxy needs its shared secret (--auth): enter it above; it is sent as x-lembas-auth and kept in this tab only.');
        $('auth').focus();
        $('status').textContent = 'waiting for the shared secret';
        return;
      }
      if (!res.ok) throw new Error('/stats answered ' + res.status);
      return res.json().then(function (stats) {
        if (stats === null || typeof stats !== 'object' || !stats.totals) throw new Error('/stats did not answer its figures');
        banner('', '');
        render(stats);
        $('status').textContent = 'updated ' + time(new Date().toISOString()) + ' (' + ZONE + ') \\u00b7 every ' + (POLL_MS / 1000) + ' s';
        document.body.setAttribute('data-loaded', 'true');
      });
    }).catch(function (err) {
      banner('err', 'Cannot read /stats from the proxy (' + (err && err.message ? err.message : err) + '). Is it running? Retrying every ' + (POLL_MS / 1000) + ' s.');
      $('status').textContent = 'unreachable';
    }).then(schedule, schedule);
  }

  $('auth').value = sessionStorage.getItem(KEY) || '';
  $('auth-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var v = $('auth').value.trim();
    if (v) sessionStorage.setItem(KEY, v); else sessionStorage.removeItem(KEY);
    poll();
  });
  poll();
})();
`

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lembas-proxy</title>
<style>${CSS}</style>
</head>
<body>
<header>
  <h1>lembas-proxy</h1>
  <span class="status" id="status">loading…</span>
  <form id="auth-form" autocomplete="off">
    <label for="auth">x-lembas-auth</label>
    <input id="auth" type="password" placeholder="shared secret" size="16">
    <button type="submit">Use</button>
  </form>
</header>
<main>
  <div id="banner" class="banner" role="status" hidden></div>
  <div id="mode" class="banner warn" hidden>Observing (--observe): every request went upstream as the agent sent it. The figures are what the proxy would save.</div>
  <section class="totals" aria-label="Totals">
    <div class="card"><div class="label">Sessions</div><div class="value" id="t-sessions">–</div></div>
    <div class="card"><div class="label">Requests</div><div class="value" id="t-requests">–</div></div>
    <div class="card"><div class="label">Input tokens sent</div><div class="value" id="t-input">–</div></div>
    <div class="card"><div class="label" data-saved-label=", tokens">Saved, tokens</div><div class="value" id="t-saved">–</div><div class="note" id="t-saved-note">estimated as characters / 4: within about a third of a tokenizer's count (README)</div></div>
    <div class="card money" hidden><div class="label" data-saved-label=", dollars">Saved, dollars</div><div class="value" id="t-money">–</div><div class="note" id="prices"></div></div>
    <div class="card"><div class="label">Cache-hit ratio</div><div class="value" id="t-ratio">–</div></div>
    <div class="card"><div class="label">Recalls</div><div class="value" id="t-recalls">–</div></div>
    <div class="card"><div class="label">Cache broken by the client</div><div class="value" id="t-breaks">–</div><div class="note" id="t-breaks-tokens"></div></div>
  </section>
  <section class="card">
    <h2>Over the last hour</h2>
    <div class="legend"><span><i style="background:var(--accent)"></i>cache-hit ratio (left)</span><span><i style="background:var(--accent2)"></i>tokens saved (right)</span><span><i style="background:var(--err)"></i>the client broke the cache</span></div>
    <svg id="chart" role="img" aria-label="Cache-hit ratio and tokens saved over time"></svg>
  </section>
  <section class="card">
    <h2>Sessions</h2>
    <div class="scroll"><table class="stack">
      <thead><tr><th>Session</th><th>Started</th><th>Agent · model · door</th><th class="num">Requests</th><th class="num">Input tokens</th><th class="num" data-saved-label=", tokens">Saved, tokens</th><th class="num money" hidden>$ saved</th><th class="num">Cache hit</th><th class="num">Recalls</th><th class="num">Client breaks</th></tr></thead>
      <tbody id="sessions-body"></tbody>
    </table></div>
    <div class="empty" id="sessions-empty">No sessions yet.</div>
  </section>
  <section class="card">
    <h2>Latest results</h2>
    <div class="scroll"><table class="stack">
      <thead><tr><th>Id</th><th>Shown as</th><th>Session</th><th class="num">Chars from the tool</th><th class="num">Chars sent</th><th>At</th></tr></thead>
      <tbody id="results-body"></tbody>
    </table></div>
    <div class="empty" id="results-empty">No results yet.</div>
  </section>
</main>
<script>${JS}</script>
</body>
</html>
`
