/**
 * The dashboard at `GET /`, in a real headless Chromium (Debian's, driven by playwright-core),
 * at a laptop's 1280x800 and a phone's 390x844, in another time zone than the machine's. Every
 * number on the page is checked against the `/stats` it read: a snapshot made by the real
 * collector (a stub server serves it behind the shared secret), and a real proxy's.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { inflateSync } from 'node:zlib'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { dashboardHtml } from '../../src/http/dashboard.js'
import { createStats, type FinishedRequest, type StatsSnapshot } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, startProxy } from '../helpers/proxy.js'

const CHROMIUM = '/usr/bin/chromium'
const SECRET = 's3cret'
const ZONE = 'Asia/Tokyo'
const LAPTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }
const PRICES = { perMTok: 3, cachedDiscount: 0.9, writePremium: 0 }

/** A snapshot as the proxy's own collector makes it: two sessions, results, a client break. */
function snapshotOf(options: { prices?: typeof PRICES; observe?: boolean }): StatsSnapshot {
  const stats = createStats(options)
  const request = (session: string, more: Partial<FinishedRequest>): FinishedRequest => ({
    door: 'chat',
    session,
    status: 200,
    ms: 5,
    stream: false,
    recalls: 0,
    upstreamError: false,
    usage: {
      prompt_tokens: 40_000,
      completion_tokens: 200,
      prompt_tokens_details: { cached_tokens: 30_000 },
    },
    ...more,
  })
  const rebuild = (charsSaved: number, carriedChars: number) => ({
    newResults: 2,
    stubs: 1,
    dedupes: 0,
    caps: 1,
    charsSaved,
    carriedChars,
    overheadChars: 600,
    results: [
      { id: '#0012', kind: 'read', charsBefore: 18_400, charsAfter: 620 },
      { id: '#0013', kind: 'output: capped', charsBefore: 9_100, charsAfter: 2_400 },
    ],
  })
  const alpha = {
    agent: 'opencode',
    model: 'qwen3-coder',
    title: 'Fix the flaky login test',
  }
  stats.recordRequest(request('t1/e-alpha', { label: alpha, rebuild: rebuild(26_480, 26_480) }))
  stats.recordRequest(
    request('t1/e-alpha', { label: alpha, recalls: 1, rebuild: rebuild(0, 26_480) }),
  )
  stats.recordRequest(
    request('t1/e-alpha', {
      label: alpha,
      rebuild: {
        ...rebuild(0, 20_000),
        cacheBreak: { item: 3, role: 'tool', by: 'client', tokens: 9_000 },
      },
    }),
  )
  stats.recordRequest(
    request('t2/i-beta', {
      door: 'messages',
      label: {
        agent: 'claude-cli',
        model: 'claude-sonnet-4-5',
        title: 'Why is CI red?',
      },
      usage: { input_tokens: 12_000, cache_read_input_tokens: 8_000, output_tokens: 90 },
      rebuild: rebuild(4_000, 4_000),
    }),
  )
  return stats.snapshot()
}

let server: Server
let base: string
const userDataDirs: string[] = []
let shotDir: string
const statsAuth: (string | undefined)[] = []
let statsDown = false
let statsBody: unknown = snapshotOf({ prices: PRICES })

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: this test needs Debian's chromium (apt-get install -y chromium)`,
  )
  server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      res.end(dashboardHtml())
      return
    }
    if (req.method === 'GET' && req.url === '/stats' && statsDown) {
      req.socket.destroy()
      return
    }
    if (req.method === 'GET' && req.url === '/stats') {
      const given = req.headers['x-lembas-auth']
      statsAuth.push(typeof given === 'string' ? given : undefined)
      if (given !== SECRET) {
        res.writeHead(401, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { message: 'unauthorized', type: 'unauthorized' } }))
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(statsBody))
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  shotDir = await mkdtemp(join(tmpdir(), 'lembas-shot-'))
})

after(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()))
  for (const dir of userDataDirs) await rm(dir, { recursive: true, force: true })
  if (shotDir) await rm(shotDir, { recursive: true, force: true })
})

const int = (n: number) => Math.round(n).toLocaleString('en-US')
const pct = (r: number | null) => (r === null ? '–' : (r * 100).toFixed(1) + '%')
const money = (v: number | null) => (v === null ? '–' : '$' + v.toFixed(Math.abs(v) < 1 ? 4 : 2))
const clock = (iso: string) =>
  new Date(iso).toLocaleTimeString('en-GB', { hour12: false, timeZone: ZONE })

async function cells(page: Page, selector: string): Promise<string[][]> {
  return page
    .locator(selector)
    .evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
    )
}

/** The page at a viewport: no horizontal scrollbar, every card inside, a screenshot of its size. */
async function fits(page: Page, viewport: { width: number; height: number }, name: string) {
  await page.setViewportSize(viewport)
  // Strings, run in the page: this file is type-checked without the DOM's types.
  const width = (await page.evaluate(
    '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
  )) as { scroll: number; client: number }
  assert.ok(width.scroll <= width.client, `${name}: ${JSON.stringify(width)}`)
  const outside = (await page.evaluate(
    `[...document.querySelectorAll('.card:not([hidden])')].filter((c) => { const r = c.getBoundingClientRect(); return r.left < 0 || r.right > ${viewport.width} }).length`,
  )) as number
  assert.equal(outside, 0, `${name}: every card inside the window`)
  // Every figure of a session is in sight without scrolling sideways (a phone stacks the row).
  const hidden = (await page.evaluate(
    `[...document.querySelectorAll('#sessions-body td:not([hidden])')].filter((td) => { const r = td.getBoundingClientRect(); return r.width === 0 || r.right > document.querySelector('#sessions-body').closest('.card').getBoundingClientRect().right }).map((td) => td.dataset.label)`,
  )) as string[]
  assert.deepEqual(hidden, [], `${name}: session figures out of sight`)
  // The chart is drawn again at the new width: its text stays at its size, not scaled down.
  // (Checked a frame after the resize, well before the next poll would draw it anyway.)
  const chart = (await page.evaluate(
    `new Promise((done) => requestAnimationFrame(() => { const c = document.getElementById('chart'); done({ drawn: Number((c.getAttribute('viewBox') || '').split(' ')[2]), width: c.clientWidth }) }))`,
  )) as { drawn: number; width: number }
  assert.equal(chart.drawn, chart.width, `${name}: the chart drawn at its width`)
  const shot = join(shotDir, `${name}.png`)
  await page.screenshot({ path: shot, fullPage: false })
  const png = decodePng(await readFile(shot))
  assert.equal(png.width, viewport.width, `${name}: screenshot width`)
  assert.equal(png.height, viewport.height, `${name}: screenshot height`)
  assert.ok(png.distinctColors > 8, `${name}: the screenshot has ${png.distinctColors} colours`)
}

test('the dashboard asks for the secret, then shows /stats in money, names and the viewer’s time, on a laptop and a phone', async () => {
  const stats = statsBody as StatsSnapshot
  const context = await launch()
  try {
    const page = context.pages()[0] ?? (await context.newPage())
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(String(err)))
    await page.goto(`${base}/`)

    // No secret yet: /stats answers 401 and the page says what to do.
    await page.locator('#banner', { hasText: 'shared secret' }).waitFor({ timeout: 10_000 })
    assert.equal(await page.textContent('#t-requests'), '–')
    await page.fill('#auth', SECRET)
    await page.click('#auth-form button')
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 })
    assert.equal(statsAuth.at(-1), SECRET)
    assert.equal(await page.evaluate("sessionStorage.getItem('lembas-auth')"), SECRET)
    assert.equal(await page.isHidden('#banner'), true)
    assert.equal(await page.isHidden('#mode'), true, 'not observing')

    const t = stats.totals
    const shown = async (id: string) => page.textContent(id)
    assert.equal(await shown('#t-sessions'), String(stats.sessions.length))
    assert.equal(await shown('#t-requests'), int(t.requests))
    assert.equal(await shown('#t-input'), int(t.promptTokens))
    assert.equal(await shown('#t-saved'), int(t.inputTokensSaved))
    // The figure is characters / 4, and the page says so (issue: counted, or said to be guessed).
    assert.match((await shown('#t-saved-note'))!, /estimated as characters \/ 4/)
    assert.ok(t.moneySaved! > 0, `money ${t.moneySaved}`)
    assert.equal(await page.isVisible('#t-money'), true, 'prices set: money shown')
    assert.equal(await shown('#t-money'), money(t.moneySaved))
    assert.match((await shown('#prices'))!, /\$3 per million input tokens, cached 90% off/)
    assert.equal(await shown('#t-ratio'), pct(t.cachedRatio))
    assert.equal(await shown('#t-recalls'), int(t.recalls))
    assert.equal(await shown('#t-breaks'), '1')
    assert.equal(await shown('#t-breaks-tokens'), '9,000 tokens billed again')

    const rows = await cells(page, '#sessions-body tr')
    assert.deepEqual(
      rows,
      stats.sessions.map((s) => [
        s.title!,
        new Date(s.firstSeen).toLocaleString('en-GB', {
          hour12: false,
          month: 'short',
          day: 'numeric',
          hour: '2-digit',
          minute: '2-digit',
          timeZone: ZONE,
        }),
        [s.agent, s.model, s.door].join(' · '),
        int(s.requests),
        int(s.promptTokens),
        int(s.inputTokensSaved),
        money(s.moneySaved),
        pct(s.cachedRatio),
        int(s.recalls),
        int(s.clientBreaks),
      ]),
    )
    // Each cell names its column (the phone layout shows it as the figure's label).
    const labels = await page
      .locator('#sessions-body tr:first-child td')
      .evaluateAll((tds) => tds.map((td) => td.getAttribute('data-label')))
    const headings = await page
      .locator('#sessions-body')
      .evaluate((body) =>
        [...body.parentElement!.querySelectorAll('thead th')].map((th) => th.textContent),
      )
    assert.deepEqual(labels, headings)
    assert.ok(labels.includes('$ saved'), labels.join(' | '))
    const breakTitle = await page.getAttribute(
      '#sessions-body tr[data-session="t1/e-alpha"] td:last-child',
      'title',
    )
    assert.match(breakTitle!, /the client changed item 3 \(tool\); 9,000 tokens billed again/)

    const results = await cells(page, '#results-body tr')
    const expected = stats.recent.flatMap((req) =>
      req.results.map((r) => [
        r.id,
        r.kind,
        stats.sessions.find((s) => s.session === req.session)!.title!,
        int(r.charsBefore),
        int(r.charsAfter),
        clock(req.at),
      ]),
    )
    assert.deepEqual(results, expected)
    assert.match((await shown('#status'))!, new RegExp(`\\(${ZONE}\\)`), 'says the time zone')

    assert.ok((await page.locator('#chart path').count()) >= 2, 'the chart draws two lines')
    // From the proxy's own series: its first point's time is the chart's start.
    assert.ok(stats.series.length >= 1, 'a series point')
    const axis = await page.locator('#chart text').allTextContents()
    assert.ok(axis.includes(clock(stats.series[0]!.at)), `${axis.join(' | ')}`)
    assert.equal(await page.locator('#chart .break-mark').count(), 1, 'a mark for the break')
    assert.deepEqual(errors, [])

    await fits(page, LAPTOP, 'laptop')
    await fits(page, PHONE, 'phone')
  } finally {
    await context.close()
  }
})

test('observing and without prices: "would save", no money', async () => {
  statsBody = snapshotOf({ observe: true })
  const context = await launch()
  try {
    const page = context.pages()[0] ?? (await context.newPage())
    await page.addInitScript(`sessionStorage.setItem('lembas-auth', '${SECRET}')`)
    await page.goto(`${base}/`)
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 })
    assert.equal(await page.isVisible('#mode'), true, 'the observe banner')
    assert.match((await page.textContent('#mode'))!, /what the proxy would save/)
    const labels = await page.locator('[data-saved-label]').allTextContents()
    assert.ok(
      labels.every((l) => l.startsWith('Would save')),
      labels.join(' | '),
    )
    assert.equal(await page.isVisible('#t-money'), false, 'no prices: no money')
    assert.equal(await page.locator('#sessions-body td.money:visible').count(), 0)
    const stats = statsBody as StatsSnapshot
    assert.equal(await page.textContent('#t-saved'), int(stats.totals.inputTokensSaved))
    await fits(page, PHONE, 'phone-observe')
  } finally {
    statsBody = snapshotOf({ prices: PRICES })
    await context.close()
  }
})

test('the dashboard says so when /stats is unreachable', async () => {
  statsDown = true
  const context = await launch()
  try {
    const page = context.pages()[0] ?? (await context.newPage())
    await page.goto(`${base}/`)
    await page.locator('#banner', { hasText: 'Cannot read /stats' }).waitFor({ timeout: 10_000 })
    assert.equal(await page.textContent('#status'), 'unreachable')
  } finally {
    statsDown = false
    await context.close()
  }
})

async function launch(): Promise<BrowserContext> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'lembas-chromium-'))
  userDataDirs.push(userDataDir)
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: LAPTOP,
    timezoneId: ZONE,
    locale: 'en-GB',
  })
  return context
}

/** Width, height and the number of distinct colours of an 8-bit RGB or RGBA PNG. */
function decodePng(file: Buffer): { width: number; height: number; distinctColors: number } {
  assert.deepEqual([...file.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'a PNG signature')
  let offset = 8
  let width = 0
  let height = 0
  let channels = 0
  const idat: Buffer[] = []
  while (offset < file.length) {
    const length = file.readUInt32BE(offset)
    const type = file.toString('latin1', offset + 4, offset + 8)
    const data = file.subarray(offset + 8, offset + 8 + length)
    if (type === 'IHDR') {
      width = data.readUInt32BE(0)
      height = data.readUInt32BE(4)
      assert.equal(data[8], 8, 'bit depth 8')
      const colorType = data[9]
      assert.ok(colorType === 2 || colorType === 6, `colour type ${colorType}`)
      channels = colorType === 6 ? 4 : 3
      assert.equal(data[12], 0, 'not interlaced')
    } else if (type === 'IDAT') idat.push(data)
    else if (type === 'IEND') break
    offset += 12 + length
  }
  const raw = inflateSync(Buffer.concat(idat))
  const stride = width * channels
  assert.equal(raw.length, height * (stride + 1))
  let prev = Buffer.alloc(stride)
  const colors = new Set<string>()
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)))
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? line[i - channels]! : 0
      const b = prev[i]!
      const c = i >= channels ? prev[i - channels]! : 0
      let add = 0
      if (filter === 1) add = a
      else if (filter === 2) add = b
      else if (filter === 3) add = (a + b) >> 1
      else if (filter === 4) {
        const p = a + b - c
        const pa = Math.abs(p - a)
        const pb = Math.abs(p - b)
        const pc = Math.abs(p - c)
        add = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
      }
      line[i] = (line[i]! + add) & 0xff
    }
    if (y % 7 === 0) {
      for (let x = 0; x < width; x += 5) {
        const p = x * channels
        colors.add(`${line[p]},${line[p + 1]},${line[p + 2]}`)
      }
    }
    prev = line
  }
  return { width, height, distinctColors: colors.size }
}

test('against a real proxy: the latest results panel fills from its /stats', async () => {
  const upstream = await startFakeUpstream()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    stats: createStats(),
  })
  const context = await launch()
  try {
    const call = (id: string) => ({
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'Bash', arguments: '{}' } }],
    })
    const seq = Array.from({ length: 1000 }, (_, i) => String(i + 1)).join('\n')
    const reply = await postChat(
      proxy.url,
      {
        model: 'm',
        tools: [{ type: 'function', function: { name: 'Bash' } }],
        messages: [
          { role: 'user', content: 'count' },
          call('a'),
          { role: 'tool', tool_call_id: 'a', content: 'short' },
          call('b'),
          { role: 'tool', tool_call_id: 'b', content: seq },
        ],
      },
      { 'x-session-id': 'dash' },
    )
    assert.equal(reply.status, 200)
    const stats = (await (await fetch(proxy.url + '/stats')).json()) as StatsSnapshot
    const page = context.pages()[0] ?? (await context.newPage())
    await page.goto(`${proxy.url}/`)
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 })
    assert.equal(await page.isVisible('#results-empty'), false)
    const rows = await page
      .locator('#results-body tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')),
      )
    const shown = stats.recent[0]!.results
    assert.deepEqual(
      rows.map((cells) => [cells[0], cells[1], cells[3], cells[4]]),
      shown.map((r) => [
        r.id,
        r.kind,
        r.charsBefore.toLocaleString('en-US'),
        r.charsAfter.toLocaleString('en-US'),
      ]),
    )
    assert.deepEqual(
      shown.map((r) => r.kind),
      ['output', 'output: capped'],
    )
    // The session row is named by its first words, and says its agent, model and door.
    const session = await page.locator('#sessions-body tr td').allTextContents()
    assert.equal(session[0], 'count')
    assert.match(session[2]!, /· m · chat$/)
    // No horizontal scrollbar on a laptop or a phone: wide tables scroll inside their panel.
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport)
      // A string, run in the page: this file is type-checked without the DOM's types.
      const width = (await page.evaluate(
        '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
      )) as { scroll: number; client: number }
      assert.ok(width.scroll <= width.client, `${viewport.width}px: ${JSON.stringify(width)}`)
    }
  } finally {
    await context.close()
    await proxy.close()
    await upstream.close()
  }
})
