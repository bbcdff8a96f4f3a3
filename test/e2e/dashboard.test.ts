/**
 * The dashboard at `GET /`, in a real headless Chromium (Debian's, driven by playwright-core):
 * a stub server serves `dashboardHtml()` and a fixed `/stats` behind the shared secret; the page
 * asks for the secret, then shows the totals, a session row and a result id, and its screenshot is
 * a non-blank PNG of the viewport's size.
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
import { chromium, type BrowserContext } from 'playwright-core'
import { dashboardHtml } from '../../src/http/dashboard.js'
import { createStats, type StatsSnapshot } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, startProxy } from '../helpers/proxy.js'

const CHROMIUM = '/usr/bin/chromium'
const SECRET = 's3cret'
const VIEWPORT = { width: 1280, height: 900 }

const at = (s: number): string => new Date(Date.UTC(2026, 11, 2, 9, 0, s)).toISOString()
const STATS = {
  total: {
    sessions: 2,
    requests: 57,
    newResults: 41,
    stubs: 12,
    dedupes: 5,
    caps: 3,
    charsSaved: 1_234_000,
    usage: { prompt_tokens: 1_876_543, completion_tokens: 20_410, cached_tokens: 1_520_000 },
    cachedRatio: 0.81,
  },
  sessions: [
    {
      id: 'sess-alpha',
      scope: 'explicit',
      requests: 40,
      newResults: 30,
      stubs: 9,
      dedupes: 4,
      caps: 2,
      charsSaved: 1_000_000,
      usage: { prompt_tokens: 1_400_000, completion_tokens: 15_000, cached_tokens: 1_200_000 },
      cachedRatio: 0.857,
    },
    {
      id: 'sess-beta',
      scope: 'implicit',
      requests: 17,
      newResults: 11,
      stubs: 3,
      dedupes: 1,
      caps: 1,
      charsSaved: 234_000,
      usage: { prompt_tokens: 476_543, completion_tokens: 5_410 },
    },
  ],
  recent: [
    {
      at: at(30),
      session: 'sess-alpha',
      usage: { prompt_tokens: 52_000, cached_tokens: 48_000 },
      results: [
        { id: '#0012', kind: 'read', charsBefore: 18_400, charsAfter: 620 },
        { id: '#0013', kind: 'grep', charsBefore: 9_100, charsAfter: 2_400 },
      ],
    },
    { at: at(20), session: 'sess-beta', results: [{ id: '#0007', kind: 'list' }] },
  ],
  series: [
    { at: at(0), cachedRatio: 0.2, charsSaved: 40_000 },
    { at: at(10), cachedRatio: 0.55, charsSaved: 400_000 },
    { at: at(20), cachedRatio: 0.72, charsSaved: 800_000 },
    { at: at(30), cachedRatio: 0.81, charsSaved: 1_234_000 },
  ],
}

let server: Server
let base: string
const userDataDirs: string[] = []
let shotDir: string
const statsAuth: (string | undefined)[] = []
let statsDown = false
let statsBody: unknown = STATS

/** The shape src/stats answers today (StatsSnapshot): flat token counts, no recent results. */
const SNAPSHOT = {
  since: at(0),
  totals: {
    requests: 9,
    upstreamErrors: 0,
    newResults: 6,
    stubs: 2,
    dedupes: 1,
    caps: 0,
    charsSaved: 48_000,
    tokensSavedEstimate: 12_000,
    recalls: 0,
    promptTokens: 90_000,
    completionTokens: 3_000,
    cachedTokens: 63_000,
    cachedRatio: 0.7,
  },
  sessions: [
    {
      session: 'sess-gamma',
      requests: 9,
      upstreamErrors: 0,
      newResults: 6,
      stubs: 2,
      dedupes: 1,
      caps: 0,
      charsSaved: 48_000,
      tokensSavedEstimate: 12_000,
      recalls: 0,
      promptTokens: 90_000,
      completionTokens: 3_000,
      cachedTokens: 0,
      cachedRatio: null,
      firstSeen: at(0),
      lastSeen: at(30),
    },
  ],
}

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

test('the dashboard asks for the secret, then renders /stats and screenshots non-blank', async () => {
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

    assert.equal(await page.textContent('#t-sessions'), '2')
    assert.equal(await page.textContent('#t-requests'), '57')
    assert.equal(await page.textContent('#t-input'), '1,876,543')
    assert.equal(await page.textContent('#t-saved'), '308,500') // 1,234,000 chars / 4
    assert.equal(await page.textContent('#t-ratio'), '81.0%')

    const alpha = page.locator('#sessions-body tr[data-session="sess-alpha"]')
    assert.equal(await alpha.count(), 1)
    const alphaCells = await alpha.locator('td').allTextContents()
    assert.deepEqual(alphaCells.slice(0, 3), ['sess-alpha', 'explicit', '40'])
    // The second session has no cached_tokens: its ratio is unknown, not 0%.
    const betaCells = await page
      .locator('#sessions-body tr[data-session="sess-beta"] td')
      .allTextContents()
    assert.equal(betaCells.at(-1), '–')

    const results: string[][] = []
    for (const row of await page.locator('#results-body tr').all()) {
      results.push(await row.locator('td').allTextContents())
    }
    assert.equal(results.length, 3)
    assert.deepEqual(results[0]?.slice(0, 5), ['#0012', 'read', 'sess-alpha', '18,400', '620'])
    assert.deepEqual(results[2]?.slice(0, 5), ['#0007', 'list', 'sess-beta', '–', '–'])

    assert.ok((await page.locator('#chart path').count()) >= 2, 'the chart draws two lines')
    assert.deepEqual(errors, [])

    const shot = join(shotDir, 'dashboard.png')
    await page.screenshot({ path: shot })
    const png = decodePng(await readFile(shot))
    assert.equal(png.width, VIEWPORT.width)
    assert.equal(png.height, VIEWPORT.height)
    assert.ok(png.distinctColors > 8, `the screenshot has ${png.distinctColors} colours`)
  } finally {
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

test('the dashboard reads the flat StatsSnapshot shape too', async () => {
  statsBody = SNAPSHOT
  const context = await launch()
  try {
    const page = context.pages()[0] ?? (await context.newPage())
    await page.addInitScript(`sessionStorage.setItem('lembas-auth', '${SECRET}')`)
    await page.goto(`${base}/`)
    await page.waitForSelector('body[data-loaded="true"]', { timeout: 10_000 })
    assert.equal(await page.textContent('#t-sessions'), '1')
    assert.equal(await page.textContent('#t-requests'), '9')
    assert.equal(await page.textContent('#t-input'), '90,000')
    assert.equal(await page.textContent('#t-saved'), '12,000')
    assert.equal(await page.textContent('#t-ratio'), '70.0%')
    const cells = await page
      .locator('#sessions-body tr[data-session="sess-gamma"] td')
      .allTextContents()
    assert.deepEqual(cells, [
      'sess-gamma',
      '–',
      '9',
      '6',
      '2',
      '1',
      '0',
      '90,000',
      '12,000',
      '0.0%',
    ])
    assert.equal(await page.isVisible('#results-empty'), true)
  } finally {
    statsBody = STATS
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
    viewport: VIEWPORT,
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
    assert.match(session[1]!, /· m · chat$/)
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
