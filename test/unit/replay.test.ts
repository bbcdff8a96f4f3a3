/**
 * `lembas-proxy replay`: recorded sessions of real agent CLIs and a generated long session,
 * replayed through the proxy in process, measured with gpt-tokenizer.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { generateTrace } from '../../bench/traces/generate.js'
import { syntheticTree } from '../helpers/synthetic-tree.js'
import { FLAGS } from '../../src/config/flags.js'
import { packageRoot } from '../../src/config/loop.js'
import { LembasError } from '../../src/errors.js'
import { CLEARED, maskOldToolResults } from '../../src/replay/baseline.js'
import { parseReplayArgs, runReplay } from '../../src/replay/command.js'
import { doorOfBody, fileSource } from '../../src/replay/input.js'
import {
  DEFAULT_OPTIONS,
  keptShare,
  price,
  replay,
  type ReplayOptions,
  type RequestReport,
  type Side,
} from '../../src/replay/replay.js'
import { formatReport } from '../../src/replay/report.js'
import { commonPrefix, TokenCounter } from '../../src/replay/tokens.js'

const fixture = (agent: string) => packageRoot() + `test/fixtures/agents/${agent}/session.jsonl`
const STEP_MASK: ReplayOptions = { ...DEFAULT_OPTIONS, mask: { keep: 2, unit: 'step' } }

/** Each request's share of the previous one repeated at its start, for one side. */
function kept(requests: RequestReport[], side: Side) {
  return requests.map((request) => request.sides?.[side].kept ?? null)
}

describe('replaying a recorded opencode session', () => {
  test('the proxy sends fewer tokens, and keeps every earlier request as the next one’s prefix', async () => {
    const report = await replay([fileSource(fixture('opencode'))], STEP_MASK)
    assert.equal(report.sessions.length, 1)
    const [session] = report.sessions
    const { totals, requests } = session!
    assert.equal(totals.requests, 17)
    assert.equal(totals.failed, 0)
    assert.ok(
      totals.sides.proxy.tokens < totals.sides.client.tokens,
      `${totals.sides.proxy.tokens} < ${totals.sides.client.tokens}`,
    )
    // Request 1 is the title generator (no tools); the main conversation starts at request 2.
    assert.equal(requests[0]!.tools, false)
    const main = requests.slice(1)
    assert.ok(main.every((request) => request.tools))
    assert.deepEqual(
      kept(main.slice(1), 'proxy'),
      main.slice(1).map(() => 1),
    )
    assert.deepEqual(
      kept(main.slice(1), 'client'),
      main.slice(1).map(() => 1),
    )
    // Every request after the first repeats the previous one: it is all cached but the new turn.
    for (const request of main.slice(1))
      assert.equal(request.sides!.proxy.cached, request.sides!.proxy.previous)
    // The masking baseline rewrites history under the cache: lower stability, more breaks.
    const masked = totals.sides.masked
    assert.ok(keptShare(masked)! < keptShare(totals.sides.proxy)!)
    assert.ok(masked.breaks > totals.sides.proxy.breaks)
    assert.ok(kept(main.slice(1), 'masked').some((share) => share! < 1))
    // What the proxy did: the two re-reads of big.ts (and the ranged one) are stubs, the edit a diff.
    assert.ok(totals.actions.stubs >= 3, `${totals.actions.stubs} stubs`)
    assert.ok(totals.actions.diffs >= 1, `${totals.actions.diffs} diffs`)
    assert.equal(totals.actions.results, 16)
    // Cached input is billed at 10 %: a stable prefix makes the proxy cheaper still.
    assert.ok(totals.sides.proxy.cost < totals.sides.client.cost)
  })

  test('pruning by user turns clears nothing in a one-prompt run', async () => {
    const report = await replay([fileSource(fixture('opencode'))])
    const { sides } = report.total
    assert.equal(sides.masked.tokens, sides.client.tokens)
    assert.equal(sides.masked.breaks, sides.client.breaks)
  })
})

describe('replaying a recorded Qwen Code session', () => {
  test('every request after the first keeps the previous one whole, with and without the proxy', async () => {
    const report = await replay([fileSource(fixture('qwen-code'))], STEP_MASK)
    const { requests, totals } = report.sessions[0]!
    assert.equal(totals.failed, 0)
    assert.deepEqual(kept(requests, 'proxy'), [null, ...requests.slice(1).map(() => 1)])
    assert.equal(totals.sides.proxy.breaks, 0)
    assert.ok(totals.sides.masked.breaks > 0)
    assert.ok(totals.actions.stubs >= 1)
  })
})

describe('replay input', () => {
  test('--record lines are grouped by their session; plain lines are one session per file', async () => {
    const lines = readFileSync(fixture('opencode'), 'utf8').trim().split('\n').slice(1, 5)
    const records = lines.flatMap((line, i) => [
      JSON.stringify({
        at: `2026-01-01T00:00:0${i}Z`,
        session: 'tA/e1',
        received: JSON.parse(line),
        sent: {},
      }),
      JSON.stringify({
        at: `2026-01-01T00:00:0${i}Z`,
        session: 'tA/e2',
        received: JSON.parse(line),
        sent: {},
      }),
    ])
    const report = await replay([
      { name: 'rec.jsonl', lines: [...records, 'not json', '{"neither":1}'] },
      { name: 'plain.jsonl', lines },
    ])
    assert.deepEqual(
      report.sessions.map((session) => [session.name, session.totals.requests]),
      [
        ['rec.jsonl tA/e1', 4],
        ['rec.jsonl tA/e2', 4],
        ['plain.jsonl', 4],
      ],
    )
    // The same requests give the same numbers, however they came.
    assert.deepEqual(report.sessions[0]!.totals, report.sessions[2]!.totals)
    assert.equal(report.skipped.length, 2)
  })

  test("a session recorded by two workers (a file each) goes through in its lines' time order", async () => {
    const lines = readFileSync(fixture('opencode'), 'utf8').trim().split('\n').slice(1, 7)
    const record = (i: number) =>
      JSON.stringify({
        at: `2026-01-01T00:00:0${i}.5${i}Z`,
        session: 'tA/w',
        received: JSON.parse(lines[i]!),
        sent: {},
      })
    // Worker 1 served requests 0, 2, 3; worker 2 requests 1, 4, 5.
    const split = await replay([
      { name: 'w1.jsonl', lines: [0, 2, 3].map(record) },
      { name: 'w2.jsonl', lines: [1, 4, 5].map(record) },
    ])
    const whole = await replay([{ name: 'one.jsonl', lines: [0, 1, 2, 3, 4, 5].map(record) }])
    assert.equal(split.sessions.length, 1)
    assert.deepEqual(split.sessions[0]!.totals, whole.sessions[0]!.totals)
    assert.equal(split.sessions[0]!.totals.requests, 6)
  })

  test('the command prints a table per session and a total, or JSON', async () => {
    const files = [fixture('opencode'), fixture('qwen-code')]
    const text = await runReplay(files)
    assert.match(text, /^Each session four ways/)
    for (const side of ['client', 'proxy', 'elided', 'masked'])
      assert.match(text, new RegExp(`^  ${side} +[0-9,]+ `, 'm'))
    assert.match(text, /^opencode\/session\.jsonl, 17 requests$/m)
    assert.match(text, /opencode\/session\.jsonl +17 /)
    assert.match(text, /^TOTAL +29 /m)
    const json = JSON.parse(await runReplay(['--json', '--price-per-mtok', '1', ...files]))
    assert.equal(json.options.pricePerMTok, 1)
    assert.equal(json.sessions.length, 2)
    assert.equal(json.total.requests, 29)
    assert.equal(json.total.sides.proxy.kept < 1, true) // the title request → the main loop
    // The elided side is a fourth side with the same fields; the options say how it ran.
    assert.deepEqual(Object.keys(json.total.sides), ['client', 'proxy', 'elided', 'masked'])
    assert.deepEqual(Object.keys(json.total.sides.elided), Object.keys(json.total.sides.proxy))
    assert.deepEqual(Object.keys(json.total.elisions), ['batches', 'results', 'inputs'])
    assert.deepEqual(json.options.elide, DEFAULT_OPTIONS.elide)
    // The recorded CLIs' results were all recognised: no drift.
    assert.match(text, / unrecog\. +client breaks$/m)
    assert.equal(json.total.actions.unrecognised, 0)
    // The saved-tokens estimate of /stats against o200k's count, on the same results.
    assert.ok(json.total.actions.savedTokens > 0, 'tokens counted')
    assert.ok(json.total.actions.savedChars > json.total.actions.savedTokens, 'chars')
    assert.match(
      text,
      /^Saved on new results: [\d,]+ characters; \/stats estimates [\d,]+ tokens \(characters \/ 4\), o200k counts [\d,]+ \(the estimate is \d+% (over|under)\)$/m,
    )
    assert.equal(json.options.cacheWritePremium, 0)
  })

  test('an .xz file is read through xz -dc; without xz the message names it', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lembas-replay-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const packed = join(dir, 'opencode.jsonl.xz')
    try {
      writeFileSync(packed, execFileSync('xz', ['-c', fixture('opencode')]))
    } catch {
      t.skip('xz is not installed')
      return
    }
    const plain = JSON.parse(await runReplay(['--json', fixture('opencode')]))
    const unpacked = JSON.parse(await runReplay(['--json', packed]))
    assert.deepEqual(unpacked.total, plain.total)
    const path = process.env.PATH
    process.env.PATH = dir
    try {
      await assert.rejects(
        runReplay([packed]),
        (error: unknown) =>
          error instanceof LembasError && /xz .*not installed/.test(error.message),
      )
    } finally {
      process.env.PATH = path
    }
    writeFileSync(join(dir, 'broken.jsonl.xz'), 'not xz')
    await assert.rejects(
      runReplay([join(dir, 'broken.jsonl.xz')]),
      (error: unknown) =>
        error instanceof LembasError && /broken\.jsonl\.xz: xz -dc failed/.test(error.message),
    )
  })

  test('files with no session are an error, not a table of zeros', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'lembas-replay-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'bad.jsonl'), 'not json\n')
    await assert.rejects(
      runReplay([join(dir, 'bad.jsonl')]),
      (error: unknown) =>
        error instanceof LembasError &&
        /no session in .*bad\.jsonl \(1 line\(s\) skipped; .*bad\.jsonl:1: /.test(error.message),
    )
    writeFileSync(join(dir, 'empty.jsonl'), '')
    await assert.rejects(
      runReplay([join(dir, 'empty.jsonl')]),
      (error: unknown) =>
        error instanceof LembasError && /the files hold no request/.test(error.message),
    )
  })

  test('bad flags name themselves', () => {
    const bad = (args: string[], pattern: RegExp) =>
      assert.throws(
        () => parseReplayArgs(args),
        (error: unknown) => error instanceof LembasError && pattern.test(error.message),
      )
    bad([], /one or more JSONL files/)
    bad(['--cached-discount', '2', 'f'], /--cached-discount/)
    bad(['--price-per-mtok', 'x', 'f'], /--price-per-mtok/)
    bad(['--mask-turn', 'week', 'f'], /--mask-turn/)
    bad(['--cache-write-premium', '-1', 'f'], /--cache-write-premium/)
    bad(['--elide-threshold', '0', 'f'], /--elide-threshold/)
    bad(['--elide-keep', '1.5', 'f'], /--elide-keep/)
    bad(['--elide-horizon', 'x', 'f'], /--elide-horizon/)
    bad(['--nope', 'f'], /nope/)
    assert.equal(parseReplayArgs(['--help']), 'help')
  })

  test('the elide flags default to the proxy’s own, and reach the options', () => {
    const defaults = parseReplayArgs(['f'])
    assert.ok(defaults !== 'help')
    assert.deepEqual(defaults.options.elide, {
      threshold: Number(FLAGS['elide-threshold'].default),
      keep: Number(FLAGS['elide-keep'].default),
      horizon: Number(FLAGS['elide-horizon'].default),
      inputs: FLAGS['elide-inputs'].default !== 'false',
    })
    assert.equal(defaults.options.cachedDiscount, Number(FLAGS['cached-discount'].default))
    assert.equal(defaults.options.cacheWritePremium, Number(FLAGS['cache-write-premium'].default))
    const set = parseReplayArgs([
      ...['--elide-threshold', '5000', '--elide-keep', '2', '--elide-horizon', '20'],
      '--elide-inputs',
      ...['--cached-discount', '0.5', '--cache-write-premium', '0.25', 'f'],
    ])
    assert.ok(set !== 'help')
    assert.deepEqual(set.options.elide, { threshold: 5000, keep: 2, horizon: 20, inputs: true })
    assert.equal(set.options.cachedDiscount, 0.5)
    assert.equal(set.options.cacheWritePremium, 0.25)
  })
})

describe('measures', () => {
  test('price: cached input at the discount', () => {
    const options = { ...DEFAULT_OPTIONS, pricePerMTok: 3, cachedDiscount: 0.9 }
    assert.equal(price(1_000_000, 0, options), 3)
    assert.ok(Math.abs(price(1_000_000, 1_000_000, options) - 0.3) < 1e-9)
    assert.ok(Math.abs(price(2_000_000, 1_000_000, options) - 3.3) < 1e-9)
    // A cache write: uncached tokens at 1.25 × the price, cached ones as before.
    const write = { ...options, cacheWritePremium: 0.25 }
    assert.ok(Math.abs(price(1_000_000, 0, write) - 3.75) < 1e-9)
    assert.ok(Math.abs(price(2_000_000, 1_000_000, write) - 4.05) < 1e-9)
  })

  test('a common token prefix counts whole equal messages, then the equal start of the next', () => {
    const counter = new TokenCounter()
    const a = counter.sequence({
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Read the file and tell me what it does.' },
      ],
    })
    const b = counter.sequence({
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Read the file and tell me why it fails.' },
      ],
    })
    const shared = commonPrefix(a, b)
    assert.ok(shared > a.tokens[0]!.length && shared < a.total, `${shared} of ${a.total}`)
    assert.equal(commonPrefix(a, a), a.total)
  })

  test('masking clears the tool results before the last turns, keeping their shape', () => {
    const messages = [
      { role: 'user', content: 'one' },
      { role: 'assistant', content: '', tool_calls: [] },
      { role: 'tool', tool_call_id: 'a', content: 'old result' },
      { role: 'assistant', content: '', tool_calls: [] },
      { role: 'tool', tool_call_id: 'b', content: [{ type: 'text', text: 'parts' }] },
      { role: 'user', content: 'two' },
      { role: 'assistant', content: '', tool_calls: [] },
      { role: 'tool', tool_call_id: 'c', content: 'new result' },
    ]
    const contents = (list: unknown[]) => list.map((m: any) => m.content)
    assert.deepEqual(
      contents(maskOldToolResults(messages, { keep: 2, unit: 'user' })),
      contents(messages),
    )
    assert.deepEqual(
      contents(maskOldToolResults(messages, { keep: 1, unit: 'user' })).slice(2, 5),
      [CLEARED, '', [{ type: 'text', text: CLEARED }]],
    )
    const steps = maskOldToolResults(messages, { keep: 2, unit: 'step' }) as any[]
    assert.deepEqual(
      contents(steps).filter((c) => c === CLEARED),
      [CLEARED],
    )
    assert.equal(steps[4].content[0].text, 'parts') // after the second-to-last assistant message
  })
})

/** How many edits a trace reads back in full; each one's new string must be in that read. */
function editsReadBack(messages: any[]): number {
  const calls = new Map<string, any>()
  const pending = new Map<string, string>()
  let checked = 0
  for (const message of messages) {
    for (const call of message.tool_calls ?? []) {
      const args = JSON.parse(call.function.arguments)
      calls.set(call.id, { name: call.function.name, ...args })
      if (call.function.name === 'edit' && args.newString !== args.oldString.trim())
        pending.set(args.filePath, args.newString)
    }
    const call = message.role === 'tool' ? calls.get(message.tool_call_id) : undefined
    if (call?.name === 'read' && call.offset === undefined && pending.has(call.filePath)) {
      const numbered = message.content.replace(/^\d+: /gm, '')
      assert.ok(numbered.includes(pending.get(call.filePath)!), call.filePath)
      pending.delete(call.filePath)
      checked++
    }
  }
  return checked
}

describe('the trace generator', () => {
  test('is deterministic, and each request is the previous one plus the next turn', () => {
    const first = [...generateTrace({ steps: 60, seed: 7 })]
    const again = [...generateTrace({ steps: 60, seed: 7 })]
    assert.deepEqual(first, again)
    assert.notDeepEqual(first, [...generateTrace({ steps: 60, seed: 8 })])
    const requests = first.map((line) => JSON.parse(line))
    assert.ok(requests.length > 60)
    for (let i = 1; i < requests.length; i++) {
      const previous = JSON.stringify(requests[i - 1].messages).slice(0, -1)
      assert.ok(JSON.stringify(requests[i].messages).startsWith(previous), `request ${i}`)
    }
    const last = requests.at(-1)
    assert.deepEqual(
      last.tools.map((tool: any) => tool.function.name),
      ['bash', 'edit', 'glob', 'grep', 'read', 'skill', 'task', 'todowrite', 'webfetch', 'write'],
    )
    // Real file contents of this repository's tree, numbered as opencode numbers them: the
    // first read of a file comes before any edit of it.
    const calls = new Map<string, any>()
    const reads: [string, string][] = []
    for (const message of last.messages) {
      for (const call of message.tool_calls ?? [])
        calls.set(call.id, { name: call.function.name, ...JSON.parse(call.function.arguments) })
      const call = message.role === 'tool' ? calls.get(message.tool_call_id) : undefined
      if (call?.name === 'read' && message.content.includes('<type>file</type>'))
        reads.push([call.filePath, message.content])
    }
    assert.ok(reads.length > 10)
    const [path, content] = reads.find(([, text]) => text.includes('(End of file'))!
    const rel = path.replace('/home/dev/lembas-proxy/', '')
    const lines = readFileSync(packageRoot() + rel, 'utf8')
      .replace(/\n$/, '')
      .split('\n')
    assert.ok(
      content.includes('\n' + lines.map((line, i) => `${i + 1}: ${line}`).join('\n') + '\n\n'),
    )
    // An edit's new string is in the file's next full read. Which calls a trace makes depends on
    // the files of the tree, so the next seeds are tried until one reads an edit back.
    let checked = editsReadBack(last.messages)
    for (let seed = 8; checked === 0 && seed < 20; seed++)
      checked = editsReadBack(JSON.parse([...generateTrace({ steps: 60, seed })].at(-1)!).messages)
    assert.ok(checked > 0, 'an edit is read back in full')
  })

  test('a long generated session replays with stubs, dedupes, caps and diffs, and a stable prefix', async () => {
    const report = await replay(
      [{ name: 'generated', lines: generateTrace({ steps: 200, seed: 1 }) }],
      DEFAULT_OPTIONS,
    )
    const { totals } = report.sessions[0]!
    assert.equal(totals.failed, 0)
    assert.equal(totals.sides.proxy.breaks, 0)
    assert.equal(keptShare(totals.sides.proxy), 1)
    assert.ok(totals.sides.proxy.tokens < totals.sides.client.tokens * 0.8)
    for (const action of ['stubs', 'dedupes', 'caps', 'diffs'] as const)
      assert.ok(totals.actions[action] > 0, `${action}: ${totals.actions[action]}`)
    assert.ok(totals.sides.masked.breaks > 0)
  })
})

test('a result of a known tool the proxy does not recognise is counted (unrecog.)', async () => {
  const edit = { file_path: 'src/a.ts', old_string: 'a', new_string: 'b' }
  const body = {
    model: 'm',
    tools: [{ type: 'function', function: { name: 'Edit', parameters: { type: 'object' } } }],
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'Edit', arguments: JSON.stringify(edit) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Changed it, as you asked.' },
    ],
  }
  const report = await replay([{ name: 'drift', lines: [JSON.stringify(body)] }], DEFAULT_OPTIONS)
  assert.equal(report.total.actions.unrecognised, 1)
})

describe('the elided side', () => {
  // 30 generated steps over a project of fixed content (this repository's own files would change
  // the session with every edit): with these settings old results pass the threshold once, early
  // enough to pay (one batch from 18,000 to 22,000 tokens).
  const tree = syntheticTree()
  after(() => rmSync(tree, { recursive: true, force: true }))
  const lines = () => generateTrace({ steps: 30, seed: 1, tree })
  const ONE_BATCH: ReplayOptions = {
    ...DEFAULT_OPTIONS,
    elide: { threshold: 20_000, keep: 2, horizon: 12, inputs: false },
  }

  test('one batch: fewer tokens than the proxy, one more break, then the same prefix again', async () => {
    const report = await replay([{ name: 'generated', lines: lines() }], ONE_BATCH)
    const { totals, requests } = report.sessions[0]!
    const { proxy, elided, client } = totals.sides
    assert.equal(totals.failed, 0)
    assert.equal(totals.elisions.batches, 1)
    assert.ok(totals.elisions.results > 1, `${totals.elisions.results} results elided`)
    assert.ok(elided.tokens < proxy.tokens, `${elided.tokens} < ${proxy.tokens}`)
    assert.equal(elided.breaks, proxy.breaks + 1)
    assert.ok(elided.largest < proxy.largest)
    assert.ok(elided.cost < proxy.cost && proxy.cost < client.cost, 'elided < proxy < client')
    // The break is the request that made the batch; every later one keeps its previous whole.
    const at = requests.findIndex((request) => (request.elided ?? 0) > 0)
    assert.ok(at > 0)
    assert.deepEqual(
      kept(requests.slice(1), 'proxy'),
      requests.slice(1).map(() => 1),
    )
    const elidedKept = kept(requests.slice(1), 'elided')
    assert.deepEqual(
      elidedKept.map((share, i) => (i + 1 === at ? share! < 1 : share === 1)),
      elidedKept.map(() => true),
    )
    assert.deepEqual(
      requests.slice(at).map((request) => request.elided),
      requests.slice(at).map(() => totals.elisions.results),
    )
  })

  test('a cache-write premium prices every side higher, and weighs in the batch', async () => {
    const plain = await replay([{ name: 'generated', lines: lines() }], ONE_BATCH)
    const options = { ...ONE_BATCH, cacheWritePremium: 0.25 }
    const write = await replay([{ name: 'generated', lines: lines() }], options)
    for (const side of ['client', 'proxy', 'elided', 'masked'] as const)
      assert.ok(
        write.total.sides[side].cost > plain.total.sides[side].cost,
        `${side}: ${write.total.sides[side].cost} > ${plain.total.sides[side].cost}`,
      )
    // The client's tokens do not depend on it: only their price does, by 25 % of the uncached.
    const client = plain.total.sides.client
    assert.deepEqual(write.total.sides.client.tokens, client.tokens)
    const premium = (0.25 * (client.tokens - client.cached) * options.pricePerMTok) / 1e6
    assert.ok(Math.abs(write.total.sides.client.cost - client.cost - premium) < 1e-9)
    // A dear enough write keeps the batch from paying: the elided side is the proxy again.
    const dear = await replay([{ name: 'generated', lines: lines() }], {
      ...ONE_BATCH,
      cacheWritePremium: 100,
    })
    assert.equal(dear.total.elisions.batches, 0)
    assert.equal(dear.total.sides.elided.tokens, dear.total.sides.proxy.tokens)
    assert.equal(dear.total.sides.elided.breaks, dear.total.sides.proxy.breaks)
  })
})

test('replay counts the requests where the client changed what it had sent (client breaks)', async () => {
  const tools = [{ type: 'function', function: { name: 'Bash', parameters: { type: 'object' } } }]
  const call = (id: string, command: string) => ({
    role: 'assistant',
    content: null,
    tool_calls: [
      { id, type: 'function', function: { name: 'Bash', arguments: JSON.stringify({ command }) } },
    ],
  })
  const log = (n: number) => Array.from({ length: 50 }, (_, i) => `run ${n} line ${i}`).join('\n')
  const history: any[] = [{ role: 'user', content: 'go' }]
  const lines: string[] = []
  for (let n = 1; n <= 4; n++) {
    history.push(call(`c${n}`, `make ${n}`), {
      role: 'tool',
      tool_call_id: `c${n}`,
      content: log(n),
    })
    // Before its fourth request the agent clears its oldest result, as agents that prune do.
    if (n === 4) history[2] = { ...history[2], content: CLEARED }
    lines.push(JSON.stringify({ model: 'm', tools, messages: history }))
  }
  const report = await replay([{ name: 'pruning', lines }], DEFAULT_OPTIONS)
  assert.equal(report.total.actions.clientBreaks, 1, 'the one request that rewrote history')
  assert.match(formatReport(report), /client breaks/)
})

describe('replaying the Messages and Responses doors', () => {
  /** Claude Code 2.1.332's last request (captured from the real CLI), cut at each user turn. */
  function claudeSession(): string[] {
    const file = packageRoot() + 'test/fixtures/agents/claude-code/session-2.1.332-glm-4.6.json'
    const request = JSON.parse(readFileSync(file, 'utf8')).request
    return request.messages.flatMap((message: { role: string }, i: number) =>
      message.role === 'user'
        ? [JSON.stringify({ ...request, messages: request.messages.slice(0, i + 1) })]
        : [],
    )
  }

  test('a plain body tells its door by its shape', () => {
    const chat = { messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function' }] }
    assert.equal(doorOfBody(chat), 'chat')
    assert.equal(doorOfBody({ ...chat, system: 'You are Claude Code.' }), 'messages')
    assert.equal(
      doorOfBody({ messages: [], tools: [{ name: 'Read', input_schema: {} }] }),
      'messages',
    )
    const result = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }],
    }
    assert.equal(doorOfBody({ messages: [result] }), 'messages')
    assert.equal(doorOfBody({ input: [{ role: 'user', content: 'hi' }], tools: [] }), 'responses')
  })

  test('a Claude Code session replays through /v1/messages, as plain bodies or as records', async () => {
    const lines = claudeSession()
    assert.ok(lines.length >= 10, `${lines.length} requests`)
    const records = lines.map((line, i) =>
      JSON.stringify({
        at: `2026-01-01T00:00:${10 + i}Z`,
        door: 'messages',
        session: 'tA/e9',
        received: JSON.parse(line),
        sent: {},
      }),
    )
    const unknown = JSON.stringify({ door: 'embeddings', session: 's', received: {}, sent: {} })
    const report = await replay(
      [
        { name: 'claude.jsonl', lines },
        { name: 'rec.jsonl', lines: [...records, unknown] },
      ],
      STEP_MASK,
    )
    assert.deepEqual(
      report.skipped.map((line) => [line.file, line.reason]),
      [['rec.jsonl', 'a record of door embeddings']],
    )
    const [plain, recorded] = report.sessions
    assert.deepEqual(
      report.sessions.map((session) => session.name),
      ['claude.jsonl (/v1/messages)', 'rec.jsonl tA/e9 (/v1/messages)'],
    )
    assert.equal(plain!.totals.requests, lines.length)
    assert.equal(plain!.totals.failed, 0)
    assert.deepEqual(recorded!.totals, plain!.totals)
    const { client, proxy, masked } = plain!.totals.sides
    // The proxy's history is byte-identical request to request, and smaller: the re-read,
    // the repeated listing and search, the capped output, the edit's diff.
    assert.equal(proxy.breaks, 0)
    assert.ok(proxy.tokens < client.tokens, `${proxy.tokens} ≥ ${client.tokens}`)
    assert.ok(masked.breaks > 0 && masked.tokens < client.tokens)
    // --elide (its defaults) makes it cheaper still: its batches leave the reads that a stub
    // still in view names (eliding one shows its re-read in full again, for a break).
    const { elided } = plain!.totals.sides
    assert.ok(elided.cost < proxy.cost, `elided ${elided.cost} ≥ proxy ${proxy.cost}`)
    const { stubs, dedupes, caps, diffs } = plain!.totals.actions
    assert.ok(
      stubs >= 1 && dedupes >= 2 && caps >= 1 && diffs >= 1,
      JSON.stringify(plain!.totals.actions),
    )
    // The prompt block goes in the system prompt and recall among the tools: both counted.
    const first = plain!.requests[0]!.sides!
    assert.ok(first.proxy.tokens > first.client.tokens, 'the first request carries the block')
    assert.ok(lines.every((line) => JSON.parse(line).stream === true))
  })

  test('whole answers as well as streams, on both doors', async () => {
    const whole = claudeSession()
      .slice(0, 3)
      .map((line) => JSON.stringify({ ...JSON.parse(line), stream: false }))
    const responses = [1, 2].map((n) =>
      JSON.stringify({
        model: 'm',
        stream: false,
        instructions: 'You are Codex.',
        tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
        input: [
          { role: 'user', content: [{ type: 'input_text', text: 'go' }] },
          ...Array.from({ length: n }, (_, k) => [
            {
              type: 'function_call',
              call_id: `c${k}`,
              name: 'shell',
              arguments: '{"command":["ls"]}',
            },
            { type: 'function_call_output', call_id: `c${k}`, output: 'a.ts\nb.ts' },
          ]).flat(),
        ],
      }),
    )
    const report = await replay([
      { name: 'claude.jsonl', lines: whole },
      { name: 'codex.jsonl', lines: responses },
    ])
    assert.deepEqual(
      report.sessions.map((s) => [s.name, s.totals.requests, s.totals.failed]),
      [
        ['claude.jsonl (/v1/messages)', 3, 0],
        ['codex.jsonl (/v1/responses)', 2, 0],
      ],
    )
    // The Responses session: the block went into the instructions, recall among the tools.
    const codex = report.sessions[1]!.requests[0]!.sides!
    assert.ok(codex.proxy.tokens > codex.client.tokens)
    assert.equal(report.sessions[1]!.totals.sides.proxy.breaks, 0)
  })
})

describe('the elided side with --elide-inputs', () => {
  // An agent that writes a script whole in each call (a heredoc, as mini-swe-agent does) and
  // gets a short output back: its results are small, its calls are not.
  const lines = () => {
    const messages: unknown[] = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Fix the bug.' },
    ]
    const out: string[] = []
    for (let step = 0; step < 16; step++) {
      const script = Array.from({ length: 40 }, (_, i) => `print("step ${step} line ${i}")`)
      const command = `cat <<'EOF' > try${step}.py\n${script.join('\n')}\nEOF\npython try${step}.py | tail -3`
      messages.push({
        role: 'assistant',
        content: `Step ${step}: try again.`,
        tool_calls: [
          {
            id: `call_${step}`,
            type: 'function',
            function: { name: 'bash', arguments: JSON.stringify({ command }) },
          },
        ],
      })
      messages.push({
        role: 'tool',
        tool_call_id: `call_${step}`,
        content: `step ${step} line 37\nstep ${step} line 38\nstep ${step} line 39`,
      })
      out.push(JSON.stringify({ model: 'm', messages, tools: [BASH_TOOL] }))
    }
    return out
  }
  const BASH_TOOL = {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Run a command.',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    },
  }

  test("the calls' scripts go too: fewer tokens, a break a batch, each call counted once", async () => {
    const without = await replay([{ name: 'scripts', lines: lines() }], DEFAULT_OPTIONS)
    const options = { ...DEFAULT_OPTIONS, elide: { ...DEFAULT_OPTIONS.elide, inputs: true } }
    const withInputs = await replay([{ name: 'scripts', lines: lines() }], options)
    // Results of three short lines are not worth a stand-in: without it nothing is elided.
    assert.equal(without.total.elisions.batches, 0)
    const { sides, elisions } = withInputs.total
    assert.ok(elisions.inputs >= 10, `${elisions.inputs} calls elided`)
    assert.equal(elisions.results, 0)
    assert.equal(sides.elided.breaks, elisions.batches)
    assert.ok(sides.elided.tokens < 0.6 * sides.proxy.tokens, `${sides.elided.tokens}`)
    assert.ok(sides.elided.cost < sides.proxy.cost)
  })
})
