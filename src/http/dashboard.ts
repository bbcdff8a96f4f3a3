/**
 * The dashboard served at `GET /`: one self-contained HTML page (inline CSS and JS, no external
 * assets, nothing to build) that polls `GET /stats` every few seconds and shows the totals, a chart
 * of the cache-hit ratio and the tokens saved over time, the sessions and the recent results.
 *
 * The page reads `/stats` defensively: every figure may be missing or named slightly differently,
 * and an unknown one shows as "–". When `/stats` answers 401 the page asks for the proxy's shared
 * secret (`x-lembas-auth`) and keeps it in `sessionStorage` for the tab's lifetime.
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
.totals { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; }
.card { min-width: 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 24px; font-weight: 650; margin-top: 4px; font-variant-numeric: tabular-nums; }
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
td.id { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.scroll { overflow-x: auto; }
`

const JS = `
(function () {
  'use strict';
  var POLL_MS = ${DASHBOARD_POLL_MS};
  var KEY = 'lembas-auth';
  var DASH = '\\u2013';
  var MAX_SAMPLES = 200;
  var samples = [];

  function $(id) { return document.getElementById(id); }
  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function num(v) {
    if (typeof v === 'number' && isFinite(v)) return v;
    if (typeof v === 'string' && v.trim() !== '' && isFinite(Number(v))) return Number(v);
    return undefined;
  }
  function pick(o) {
    if (!isObj(o)) return undefined;
    for (var i = 1; i < arguments.length; i++) {
      var path = String(arguments[i]).split('.');
      var v = o;
      for (var j = 0; j < path.length && v !== undefined; j++) v = isObj(v) ? v[path[j]] : undefined;
      if (v !== undefined && v !== null) return v;
    }
    return undefined;
  }
  function pickNum(o) { var v = pick.apply(null, arguments); return num(v); }
  function arr() {
    for (var i = 0; i < arguments.length; i++) if (Array.isArray(arguments[i])) return arguments[i];
    return [];
  }
  function fmtInt(v) { return v === undefined ? DASH : Math.round(v).toLocaleString('en-US'); }
  function fmtPct(v) { return v === undefined ? DASH : (v * 100).toFixed(1) + '%'; }
  function text(v) { return v === undefined || v === null || v === '' ? DASH : String(v); }

  function usageOf(o) {
    var u = pick(o, 'usage') || {};
    function one(names) {
      var v = pickNum.apply(null, [u].concat(names));
      return v !== undefined ? v : pickNum.apply(null, [o].concat(names));
    }
    return {
      prompt: one(['prompt_tokens', 'promptTokens', 'input_tokens', 'inputTokens']),
      completion: one(['completion_tokens', 'completionTokens', 'output_tokens', 'outputTokens']),
      cached: one(['cached_tokens', 'cachedTokens', 'prompt_tokens_details.cached_tokens'])
    };
  }
  function ratioOf(o, u) {
    var r = pickNum(o, 'cachedRatio', 'cached_ratio', 'cacheHitRatio', 'cache_hit_ratio', 'cacheRatio', 'ratio');
    if (r === undefined && u.prompt !== undefined && u.cached !== undefined && u.prompt > 0) r = u.cached / u.prompt;
    if (r !== undefined && r > 1 && r <= 100) r = r / 100;
    return r;
  }
  function savedTokensOf(o) {
    var t = pickNum(o, 'tokensSavedEstimate', 'tokensSaved', 'tokens_saved', 'estimatedTokensSaved', 'savedTokens');
    if (t !== undefined) return t;
    var c = pickNum(o, 'charsSaved', 'chars_saved');
    return c === undefined ? undefined : c / 4;
  }

  function el(tag, cls, content) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (content !== undefined) e.textContent = content;
    return e;
  }
  function row(cells) {
    var tr = document.createElement('tr');
    cells.forEach(function (c) { tr.appendChild(el('td', c[1] || '', c[0])); });
    return tr;
  }
  function banner(kind, message) {
    var b = $('banner');
    if (!message) { b.hidden = true; b.textContent = ''; return; }
    b.hidden = false; b.className = 'banner ' + kind; b.textContent = message;
  }

  function renderTotals(stats, sessions) {
    var t = pick(stats, 'total', 'totals', 'all') || stats;
    var u = usageOf(t);
    var count = pickNum(t, 'sessions', 'sessionCount');
    if (count === undefined) count = pickNum(stats, 'sessionCount');
    if (count === undefined && Array.isArray(sessions) && sessions.length > 0) count = sessions.length;
    if (count === undefined && Array.isArray(pick(stats, 'sessions'))) count = sessions.length;
    var requests = pickNum(t, 'requests', 'requestCount');
    var ratio = ratioOf(t, u);
    var saved = savedTokensOf(t);
    $('t-sessions').textContent = fmtInt(count);
    $('t-requests').textContent = fmtInt(requests);
    $('t-input').textContent = fmtInt(u.prompt);
    $('t-saved').textContent = fmtInt(saved);
    $('t-ratio').textContent = fmtPct(ratio);
    return { ratio: ratio, saved: saved };
  }

  function renderSessions(sessions) {
    var body = $('sessions-body');
    body.textContent = '';
    $('sessions-empty').hidden = sessions.length > 0;
    sessions.forEach(function (s) {
      if (!isObj(s)) return;
      var u = usageOf(s);
      var tr = row([
        [text(pick(s, 'title') || pick(s, 'id', 'session', 'sessionId')), pick(s, 'title') ? '' : 'id'],
        [text(pick(s, 'scope', 'kind') || [pick(s, 'agent'), pick(s, 'model'), pick(s, 'door')].filter(Boolean).join(' · ') || undefined)],
        [fmtInt(pickNum(s, 'requests', 'requestCount')), 'num'],
        [fmtInt(pickNum(s, 'newResults', 'new_results', 'results')), 'num'],
        [fmtInt(pickNum(s, 'stubs')), 'num'],
        [fmtInt(pickNum(s, 'dedupes', 'dedupe')), 'num'],
        [fmtInt(pickNum(s, 'caps', 'capped')), 'num'],
        [fmtInt(u.prompt), 'num'],
        [fmtInt(savedTokensOf(s)), 'num'],
        [fmtPct(ratioOf(s, u)), 'num']
      ]);
      tr.setAttribute('data-session', String(pick(s, 'id', 'session', 'sessionId') || ''));
      body.appendChild(tr);
    });
  }

  function resultId(r) {
    var id = pick(r, 'id', 'resultId', 'result_id', 'ref');
    if (typeof id === 'number') id = '#' + String(id).padStart(4, '0');
    if (typeof id === 'string' && /^\\d+$/.test(id)) id = '#' + id.padStart(4, '0');
    return id;
  }
  function collectResults(stats) {
    var recent = arr(pick(stats, 'recent'), pick(stats, 'recentRequests'), pick(stats, 'recent_requests'), pick(stats, 'recentResults'), pick(stats, 'results'));
    var out = [];
    recent.forEach(function (req) {
      if (!isObj(req)) return;
      var inner = arr(pick(req, 'results'), pick(req, 'toolResults'), pick(req, 'newResults'));
      if (inner.length > 0) {
        inner.forEach(function (r) { if (isObj(r)) out.push({ r: r, req: req }); });
      } else if (resultId(req) !== undefined) {
        out.push({ r: req, req: req });
      }
    });
    return out;
  }
  function timeText(v) {
    if (v === undefined) return DASH;
    var d = new Date(typeof v === 'number' && v < 1e12 ? v * 1000 : v);
    return isNaN(d.getTime()) ? String(v) : d.toLocaleTimeString('en-GB');
  }
  function renderResults(stats) {
    var body = $('results-body');
    body.textContent = '';
    var items = collectResults(stats).slice(0, 50);
    $('results-empty').hidden = items.length > 0;
    items.forEach(function (item) {
      var r = item.r, req = item.req;
      var before = pickNum(r, 'charsBefore', 'before', 'chars.before', 'originalChars', 'rawChars');
      var after = pickNum(r, 'charsAfter', 'after', 'chars.after', 'shownChars', 'sentChars');
      body.appendChild(row([
        [text(resultId(r)), 'id'],
        [text(pick(r, 'kind', 'tool', 'type', 'shape'))],
        [text(pick(r, 'session') || pick(req, 'session', 'sessionId')), 'id'],
        [fmtInt(before), 'num'],
        [fmtInt(after), 'num'],
        [timeText(pick(r, 'at', 'time') || pick(req, 'at', 'time', 'timestamp'))]
      ]));
    });
  }

  function seriesOf(stats) {
    var s = arr(pick(stats, 'series'), pick(stats, 'history'), pick(stats, 'timeline'));
    var pts = [];
    s.forEach(function (p) {
      if (!isObj(p)) return;
      var u = usageOf(p);
      var t = Date.parse(String(pick(p, 'at', 'time', 't')));
      pts.push({ t: isNaN(t) ? pts.length : t, ratio: ratioOf(p, u), saved: savedTokensOf(p) });
    });
    return pts;
  }
  function renderChart(stats, now) {
    var pts = seriesOf(stats);
    if (pts.length < 2) {
      samples.push({ t: Date.now(), ratio: now.ratio, saved: now.saved });
      if (samples.length > MAX_SAMPLES) samples.shift();
      pts = samples;
    }
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
    pts.forEach(function (p) { if (p.saved !== undefined && p.saved > maxSaved) maxSaved = p.saved; });
    var hasSaved = maxSaved > 0;
    if (!hasSaved) maxSaved = 1;
    var grid = getComputedStyle(document.documentElement).getPropertyValue('--line') || '#ccc';
    for (var i = 0; i <= 4; i++) {
      var y = T + (H - T - B) * (1 - i / 4);
      add('line', { x1: L, x2: W - R, y1: y, y2: y, stroke: grid, 'stroke-width': 1 });
      add('text', { x: L - 6, y: y + 4, 'text-anchor': 'end' }, (i * 25) + '%');
      if (hasSaved) add('text', { x: W - R + 6, y: y + 4 }, Math.round(maxSaved * i / 4).toLocaleString('en-US'));
    }
    var n = pts.length;
    function x(idx) { return n <= 1 ? (L + (W - R)) / 2 : L + (W - R - L) * idx / (n - 1); }
    function line(key, scale, color) {
      var d = '', dots = [];
      pts.forEach(function (p, idx) {
        var v = p[key];
        if (v === undefined) return;
        var yy = T + (H - T - B) * (1 - Math.max(0, Math.min(1, v / scale)));
        d += (d === '' ? 'M' : 'L') + x(idx).toFixed(1) + ' ' + yy.toFixed(1) + ' ';
        dots.push([x(idx), yy]);
      });
      if (d !== '') add('path', { d: d, fill: 'none', stroke: color, 'stroke-width': 2, 'stroke-linejoin': 'round' });
      if (dots.length <= 30) dots.forEach(function (p) { add('circle', { cx: p[0], cy: p[1], r: 3, fill: color }); });
    }
    var css = getComputedStyle(document.documentElement);
    line('ratio', 1, css.getPropertyValue('--accent').trim() || '#2f6fdb');
    line('saved', maxSaved, css.getPropertyValue('--accent2').trim() || '#1f9d6b');
    if (n > 0 && pts[0].t > 1e9 && pts[n - 1].t > 1e9) {
      add('text', { x: L, y: H - 6 }, timeText(pts[0].t));
      add('text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, timeText(pts[n - 1].t));
    }
  }

  function render(stats) {
    var sessions = arr(pick(stats, 'sessions'), pick(stats, 'perSession'), pick(stats, 'bySession'));
    if (sessions.length === 0 && isObj(pick(stats, 'sessions'))) {
      var m = pick(stats, 'sessions');
      sessions = Object.keys(m).map(function (k) { return Object.assign({ id: k }, m[k]); });
    }
    var now = renderTotals(stats, sessions);
    renderSessions(sessions);
    renderResults(stats);
    renderChart(stats, now);
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
        if (!isObj(stats)) throw new Error('/stats did not answer a JSON object');
        banner('', '');
        render(stats);
        $('status').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB') + ' \\u00b7 every ' + (POLL_MS / 1000) + ' s';
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
  <section class="totals" aria-label="Totals">
    <div class="card"><div class="label">Sessions</div><div class="value" id="t-sessions">–</div></div>
    <div class="card"><div class="label">Requests</div><div class="value" id="t-requests">–</div></div>
    <div class="card"><div class="label">Input tokens</div><div class="value" id="t-input">–</div></div>
    <div class="card"><div class="label">Tokens saved (est.)</div><div class="value" id="t-saved">–</div></div>
    <div class="card"><div class="label">Cache-hit ratio</div><div class="value" id="t-ratio">–</div></div>
  </section>
  <section class="card">
    <h2>Over time</h2>
    <div class="legend"><span><i style="background:var(--accent)"></i>cache-hit ratio (left)</span><span><i style="background:var(--accent2)"></i>tokens saved, est. (right)</span></div>
    <svg id="chart" role="img" aria-label="Cache-hit ratio and tokens saved over time"></svg>
  </section>
  <section class="card">
    <h2>Sessions</h2>
    <div class="scroll"><table>
      <thead><tr><th>Session</th><th>Scope</th><th class="num">Requests</th><th class="num">New results</th><th class="num">Stubs</th><th class="num">Dedupes</th><th class="num">Caps</th><th class="num">Input tokens</th><th class="num">Saved (est.)</th><th class="num">Cache hit</th></tr></thead>
      <tbody id="sessions-body"></tbody>
    </table></div>
    <div class="empty" id="sessions-empty">No sessions yet.</div>
  </section>
  <section class="card">
    <h2>Recent results</h2>
    <div class="scroll"><table>
      <thead><tr><th>Id</th><th>Kind</th><th>Session</th><th class="num">Chars before</th><th class="num">Chars after</th><th>At</th></tr></thead>
      <tbody id="results-body"></tbody>
    </table></div>
    <div class="empty" id="results-empty">No results yet.</div>
  </section>
</main>
<script>${JS}</script>
</body>
</html>
`
