/**
 * `--elide` (beyond spec 3.0.0): old tool results replaced in one batch by a stand-in, on every
 * door. One deliberate break of the history, then the same bytes again: fast path or full,
 * after a restart, on two replicas of one Redis; every elided id recalls in full.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { dueBatch, elidedInput, standIn, type ElideSettings } from '../../src/pipeline/elide.js'
import { createStore, type Store } from '../../src/store/index.js'
import { DOORS, type Door, type DoorCall } from '../helpers/doors.js'
import {
  startFakeUpstream,
  type FakeScript,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import {
  loop,
  postChat,
  postTo,
  requestLines,
  startProxy,
  type TestProxy,
} from '../helpers/proxy.js'
import { createLogger } from '../../src/log.js'
import { startRedis, type TestRedis } from '../helpers/redis-server.js'

const DAY = 86_400_000
const ELIDE: ElideSettings = {
  thresholdTokens: 5000,
  keepResults: 2,
  horizon: 20,
  cachedDiscount: 0.9,
  writePremium: 0,
  standIn: loop.proxy.elide.stand_in,
}

/** With `--elide-inputs`, as loop.json has it. */
const INPUTS: ElideSettings = {
  ...ELIDE,
  inputs: {
    standIn: loop.proxy.elide.input_stand_in,
    minChars: loop.proxy.elide.input_min_chars,
    recalled: loop.proxy.elide.recalled_input,
  },
}

/** A different output per step, ~6,000 characters each. */
function output(step: number): string {
  return Array.from({ length: 240 }, (_, i) => `step ${step} line ${i + 1} of the log`).join('\n')
}

const STEPS = 9

/** A Bash command: `log N`, and with `padding` a long heredoc after it (a script written whole). */
function command(step: number, padding: boolean): string {
  if (!padding) return `log ${step}`
  // (`$&` and `$'` as a shell script may have them: recall must show them as written.)
  const body = Array.from({ length: 12 }, (_, i) => `echo "step ${step} writes line ${i} $& $'"`)
  return `log ${step} && cat <<'EOF' > step${step}.sh\n${body.join('\n')}\nEOF`
}

/**
 * The model: STEPS Bash calls, then a recall of #0001, then a reply. `early`: it recalls #0001
 * in its fourth turn first (an upstream request of its own, the hidden round), and at the end
 * recalls that recall's own answer instead.
 */
function script(door: Door, padding = false, early = false) {
  let n = 0
  let answerId = '#0001'
  return (request: RecordedRequest) => {
    const at = n++
    const call = (name: string, args: Record<string, unknown>): DoorCall => ({
      id: `call_${at}`,
      name,
      args,
    })
    if (early && at === 3)
      return door.respond(request, { calls: [call('recall', { id: '#0001' })] }, at)
    if (early && at === 4)
      answerId = /\[(#[0-9a-f]{4}) recall #0001/.exec(door.results(request).at(-1) ?? '')![1]!
    const step = early && at > 3 ? at - 1 : at
    if (step < STEPS)
      return door.respond(
        request,
        { calls: [call('Bash', { command: command(step, padding) })] },
        at,
      )
    if (step === STEPS)
      return door.respond(request, { calls: [call('recall', { id: answerId })] }, at)
    return door.respond(request, { text: 'Done.' }, at)
  }
}

interface Deployment {
  url(request: number): string
  /** Called before each client request (a restart happens here). */
  before(request: number): Promise<void>
  close(): Promise<void>
}

async function session(
  door: Door,
  deploy: (upstream: string) => Promise<Deployment>,
  padding = false,
  model: FakeScript = script(door, padding),
) {
  const upstream = await startFakeUpstream()
  upstream.setScript(model)
  const deployment = await deploy(upstream.url)
  const client = door.client({ stream: false })
  client.user('work')
  try {
    for (let request = 0; request < STEPS + 4; request++) {
      await deployment.before(request)
      const answer = await client.send(deployment.url(request))
      assert.equal(answer.status, 200, answer.raw.slice(0, 300))
      if (answer.calls.length === 0) break
      assert.ok(!answer.calls.some((c) => c.name === 'recall'), 'the client never sees recall')
      const step = Number(String(answer.calls[0]!.args.command).split(' ')[1])
      client.results(answer.calls, [output(step)])
    }
  } finally {
    await deployment.close()
    await upstream.close()
  }
  return upstream.requests
    .filter((r) => r.pathname.endsWith(door.upstreamPath))
    .map((r) => JSON.stringify(r.json[door.historyField]))
}

async function single(
  upstreamUrl: string,
  store: Store,
  extra: { spliceChars?: number; log?: string[]; elide?: ElideSettings } = {},
): Promise<Deployment> {
  const { log: lines, elide = ELIDE, ...options } = extra
  const log = lines && createLogger('info', (line) => lines.push(line))
  const proxy = await startProxy({ upstreamUrl, store, elide, ...options, log })
  return { url: () => proxy.url, before: async () => {}, close: () => proxy.close() }
}

/** Where a history stops being the previous one's start: the breaks of the cache. */
function breaks(histories: readonly string[]): number[] {
  const out: number[] = []
  for (let i = 1; i < histories.length; i++)
    if (!histories[i]!.startsWith(histories[i - 1]!.slice(0, -1))) out.push(i)
  return out
}

describe('--elide on every door', () => {
  let redis: TestRedis
  const dir = mkdtempSync(join(tmpdir(), 'lembas-elide-'))
  before(async () => {
    redis = await startRedis()
  })
  after(async () => {
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const door of DOORS) {
    test(`${door.name}: one batch, one break, the same bytes on every path`, async () => {
      const memory = async () => createStore('memory:', { idleTtlMs: DAY })
      const fast = await session(door, async (url) => single(url, await memory()))
      const full = await session(door, async (url) =>
        single(url, await memory(), { spliceChars: 0 }),
      )
      assert.deepEqual(full, fast, 'the full path sends what the fast path sends')

      const batchAt = breaks(fast)
      assert.equal(batchAt.length, 1, `one deliberate break: ${batchAt}`)
      const afterBatch = fast[batchAt[0]!]!
      assert.match(afterBatch, /\[#0001\] Elided; recall shows it\./)
      const last = fast.at(-1)!
      // The last two results stay whole; nothing is ever a stub of an elided result.
      assert.ok(last.includes(`step ${STEPS - 1} line 240 of the log`))
      assert.doesNotMatch(last, /Same result as #0001|Unchanged since #0001/)
      // The recall of an elided id is answered with its full text.
      assert.match(
        last,
        /\[#[0-9a-f]{4} recall #0001 lines 1-240 of 240\]\\nstep 0 line 1 of the log/,
      )
      assert.ok(
        afterBatch.length < fast[batchAt[0]! - 1]!.length,
        'the history is smaller after it',
      )

      await sameOnRestartAndReplicas(door, fast, ELIDE, batchAt[0]!)
    })

    test(`${door.name}: --elide-inputs takes the elided calls' long strings too, recall shows them`, async () => {
      const memory = async () => createStore('memory:', { idleTtlMs: DAY })
      const fast = await session(
        door,
        async (url) => single(url, await memory(), { elide: INPUTS }),
        true,
      )
      const full = await session(
        door,
        async (url) => single(url, await memory(), { elide: INPUTS, spliceChars: 0 }),
        true,
      )
      assert.deepEqual(full, fast, 'the full path sends what the fast path sends')
      // The calls' strings count too: old results pass the threshold again after the first.
      const batchAt = breaks(fast)
      assert.ok(batchAt.length >= 1 && batchAt.length <= 3, `a break a batch: ${batchAt}`)
      const [before, afterBatch] = [fast[batchAt[0]! - 1]!, fast[batchAt[0]!]!]
      assert.ok(before.includes('step 0 writes line 11'), 'the script as the model wrote it')
      assert.ok(!afterBatch.includes('step 0 writes line'), 'then its stand-in')
      assert.match(afterBatch, /\[#0001\] Elided; recall shows it\./)
      // The last two results keep their calls' strings, as they keep their own.
      assert.ok(afterBatch.includes(`step ${batchAt[0]! - 1} writes line 11`))
      // Recall of the id shows the call as written, then the result.
      const last = fast.at(-1)!
      const recalled =
        /\[#[0-9a-f]{4} recall #0001 lines 1-240 of 240\]\\nInput: (.*?)\\n\\nstep 0 line 1 of the log/.exec(
          last,
        )
      assert.ok(recalled, last.slice(-600))
      assert.ok(recalled[1]!.includes("step 0 writes line 11 $& $'"), recalled[1])
      assert.ok(afterBatch.length < fast[batchAt[0]! - 1]!.length)
      await sameOnRestartAndReplicas(door, fast, INPUTS, batchAt[0]!, true)
    })
  }

  const recallingModel = (door: Door, padding = false) => script(door, padding, true)

  for (const door of DOORS) {
    test(`${door.name}: a recall's answer, put back on every later request, is elided like any old result`, async () => {
      const memory = async () => createStore('memory:', { idleTtlMs: DAY })
      const fast = await session(
        door,
        async (url) => single(url, await memory()),
        false,
        recallingModel(door),
      )
      const full = await session(
        door,
        async (url) => single(url, await memory(), { spliceChars: 0 }),
        false,
        recallingModel(door),
      )
      assert.deepEqual(full, fast, 'the full path sends what the fast path sends')
      const answer = /\[(#[0-9a-f]{4}) recall #0001 lines 1-240 of 240\]/.exec(fast[4]!)
      assert.ok(answer, 'the recall round carries the answer')
      const id = answer[1]!
      const standIn = `[${id} recall #0001 lines 1-240 of 240] Elided; recall shows it.`
      const elidedAt = fast.findIndex((history) => history.includes(standIn))
      assert.ok(elidedAt > 4, `a later batch elides the answer: ${breaks(fast)}`)
      assert.ok(breaks(fast).includes(elidedAt), 'in a batch: a break of its own')
      for (const history of fast.slice(elidedAt, -1))
        assert.ok(
          !history.includes('step 0 line 1 of the log'),
          'neither #0001 nor its recall whole',
        )
      // Recall of the answer's id shows it whole, and the history stays byte-identical around it.
      assert.match(
        fast.at(-1)!,
        new RegExp(
          `\\[#[0-9a-f]{4} recall ${id} lines 1-241 of 241\\]\\\\n\\[${id} recall #0001 lines 1-240 of 240\\]\\\\nstep 0 line 1 of the log`,
        ),
      )
      assert.ok(breaks(fast).length <= 3, `a break a batch: ${breaks(fast)}`)
      await sameOnRestartAndReplicas(door, fast, ELIDE, elidedAt, false, () => recallingModel(door))
    })
  }
  for (const door of DOORS) {
    test(`${door.name}: --elide-inputs, the call the model made in the answer after a recall goes too`, async () => {
      const memory = async () => createStore('memory:', { idleTtlMs: DAY })
      const model = () => recallingModel(door, true)
      const fast = await session(
        door,
        async (url) => single(url, await memory(), { elide: INPUTS }),
        true,
        model(),
      )
      const full = await session(
        door,
        async (url) => single(url, await memory(), { elide: INPUTS, spliceChars: 0 }),
        true,
        model(),
      )
      assert.deepEqual(full, fast, 'the full path sends what the fast path sends')
      // Step 3's heredoc is the call of the answer the recall round led to (upstream request 5).
      assert.ok(fast[5]!.includes('step 3 writes line 11'), 'whole at first')
      const goneAt = fast.findIndex(
        (history, i) => i > 5 && !history.includes('step 3 writes line'),
      )
      assert.ok(goneAt > 5, 'a later batch takes its long strings')
      for (const history of fast.slice(goneAt))
        assert.ok(!history.includes('step 3 writes line'), 'and they stay out')
      assert.ok(breaks(fast).includes(goneAt), 'in a batch: a break of its own')
      await sameOnRestartAndReplicas(door, fast, INPUTS, goneAt, true, model)
    })
  }

  /** The session again, with a restart on one SQLite file after the batch, and on two replicas. */
  async function sameOnRestartAndReplicas(
    door: Door,
    fast: readonly string[],
    elide: ElideSettings,
    batchAt: number,
    padding = false,
    model: () => FakeScript = () => script(door, padding),
  ) {
    const file = join(dir, `${door.name}-${padding}.db`)
    let proxy: TestProxy | undefined
    let store: Store | undefined
    const restarted = await session(
      door,
      async (url) => ({
        url: () => proxy!.url,
        async before(request) {
          if (request !== 0 && request !== batchAt + 1) return
          await proxy?.close()
          await store?.close()
          store = await createStore('sqlite:' + file, { idleTtlMs: DAY })
          proxy = await startProxy({ upstreamUrl: url, store, elide })
        },
        async close() {
          await proxy?.close()
          await store?.close()
        },
      }),
      padding,
      model(),
    )
    assert.deepEqual(restarted, fast, 'a restart sends the same bytes')

    // Two replicas on one Redis, taking requests in turn.
    const stores = await Promise.all([0, 1].map(() => createStore(redis.url, { idleTtlMs: DAY })))
    const replicas = await session(
      door,
      async (url) => {
        const proxies = await Promise.all(
          stores.map((s) => startProxy({ upstreamUrl: url, store: s, elide })),
        )
        return {
          url: (request) => proxies[request % 2]!.url,
          before: async () => {},
          async close() {
            for (const p of proxies) await p.close()
            for (const s of stores) await s.close()
          },
        }
      },
      padding,
      model(),
    )
    assert.deepEqual(replicas, fast, 'two replicas send the same bytes')
  }
})

describe('--elide with its defaults: a batch a turn, on the fast path', () => {
  // The defaults (--elide-threshold 30, --elide-keep 1): each request elides the result the
  // one before it added, which the fast path leaves out of what it remembers and parses again.
  const defaults: ElideSettings = { ...ELIDE, thresholdTokens: 30, keepResults: 1, horizon: 200 }
  // With --elide-inputs a batch rewrites the call before each result as well: the fast path
  // leaves the newest turn's calls out of what it remembers too.
  const withInputs: ElideSettings = { ...defaults, inputs: INPUTS.inputs }
  for (const [door, elide] of DOORS.flatMap(
    (d) =>
      [
        [d, defaults],
        [d, withInputs],
      ] as const,
  )) {
    const named = elide.inputs ? ' (--elide-inputs)' : ''
    test(`${door.name}${named}: every request goes on from the one before, the same bytes as the full path`, async () => {
      const memory = async () => createStore('memory:', { idleTtlMs: DAY })
      const lines: string[] = []
      const padding = elide.inputs !== undefined
      const fast = await session(
        door,
        async (url) => single(url, await memory(), { elide, log: lines }),
        padding,
      )
      const full = await session(
        door,
        async (url) => single(url, await memory(), { elide, spliceChars: 0 }),
        padding,
      )
      assert.deepEqual(full, fast, 'the full path sends what the fast path sends')
      const batches = breaks(fast)
      assert.ok(batches.length >= STEPS - 2, `a batch a turn: ${batches}`)
      const logged = requestLines(lines).filter((line) => line.messages > 0)
      assert.deepEqual(
        logged.slice(1).map((line) => line.spliced),
        logged.slice(1).map(() => 1),
        'every request after the first on the fast path, batches included',
      )
      // Each batch names its break: the proxy's, billing the tokens from the elided result to
      // the newest turn (here a stand-in and a call): not the elided text, which is gone, nor
      // the newest result, sent uncached either way.
      const breaksNamed = logged.filter((line) => line.cacheBreak)
      assert.equal(breaksNamed.length, batches.length)
      const oneOutput = JSON.stringify(output(0)).length / 4
      assert.deepEqual(
        breaksNamed.filter(
          (line) =>
            line.cacheBreak.by !== 'proxy' ||
            line.cacheBreak.tokens <= 0 ||
            line.cacheBreak.tokens >= oneOutput / 4,
        ),
        [],
      )
      assert.match(fast.at(-1)!, /\[#0001\] Elided; recall shows it\./)
      if (padding) assert.ok(!fast.at(-2)!.includes('step 0 writes line'), 'its call too')
    })
  }
})

describe("--elide-inputs: what the calls' strings save counts where the results' does", () => {
  test('chat: each request carries, over results and calls, the client less what was sent', async () => {
    const door = DOORS.find((d) => d.name === 'chat')!
    const lines: string[] = []
    const log = createLogger('debug', (line) => lines.push(line))
    const store = await createStore('memory:', { idleTtlMs: DAY })
    const sent = await session(
      door,
      async (url) => {
        const proxy = await startProxy({ upstreamUrl: url, store, elide: INPUTS, log })
        return { url: () => proxy.url, before: async () => {}, close: () => proxy.close() }
      },
      true,
    )
    const carried = lines
      .map((line) => JSON.parse(line))
      .filter((line) => line.event === 'rebuilt')
      .map((line) => line.carriedChars as number)
    // Up to the recall, each upstream request is the client's: its results were output(step),
    // its calls' arguments the commands as the model wrote them.
    for (let k = 1; k < STEPS; k++) {
      const messages = JSON.parse(sent[k]!) as any[]
      let expected = 0
      let step = 0
      for (const message of messages) {
        if (message.role === 'tool') expected += output(step++).length - message.content.length
        for (const call of message.tool_calls ?? [])
          expected +=
            JSON.stringify({ command: command(step, true) }).length - call.function.arguments.length
      }
      assert.equal(carried[k], expected, `request ${k + 1}`)
    }
    assert.ok(sent.some((history) => history.includes('Elided; recall shows it.')))
  })
})

describe('a turn of parallel calls', () => {
  const EAGER: ElideSettings = { ...ELIDE, thresholdTokens: 1, keepResults: 1, horizon: 200 }
  const TURNS = 8
  const parallel = (command: string) =>
    Array.from({ length: 100 }, (_, i) => `${command} line ${i + 1}`).join('\n')

  for (const door of DOORS) {
    test(`${door.name}: none of its results is elided in the request that first carries them`, async () => {
      const upstream = await startFakeUpstream()
      let n = 0
      upstream.setScript((request) => {
        const step = n++
        if (step >= TURNS) return door.respond(request, { text: 'Done.' }, step)
        const calls = [0, 1, 2].map((j) => ({
          id: `call_${step}_${j}`,
          name: 'Bash',
          args: { command: `log ${step} ${j}` },
        }))
        return door.respond(request, { calls }, step)
      })
      const store = await createStore('memory:', { idleTtlMs: DAY })
      const proxy = await startProxy({ upstreamUrl: upstream.url, store, elide: EAGER })
      const client = door.client({ stream: false })
      client.user('work')
      try {
        for (let turn = 0; turn <= TURNS; turn++) {
          const answer = await client.send(proxy.url)
          assert.equal(answer.status, 200, answer.raw.slice(0, 300))
          if (answer.calls.length === 0) break
          client.results(
            answer.calls,
            answer.calls.map((call) => parallel(String(call.args.command))),
          )
        }
      } finally {
        await proxy.close()
        await upstream.close()
      }
      const sent = upstream.requests.filter((r) => r.pathname.endsWith(door.upstreamPath))
      assert.equal(sent.length, TURNS + 1)
      for (const [i, request] of sent.slice(1).entries()) {
        const results = door.results(request)
        // The newest turn's three results, as the model must first see them: whole.
        for (const [j, text] of results.slice(-3).entries())
          assert.ok(text.includes(`log ${i} ${j} line 100`), `request ${i + 1}, call ${j}: ${text}`)
      }
      // Older results were elided all the same.
      assert.match(door.results(sent.at(-1)!).join('\n'), /Elided; recall shows it\./)
    })
  }

  test('chat, --elide-inputs: calls of one id (a model server that says call_0 each time) each keep their own', async () => {
    const door = DOORS.find((d) => d.name === 'chat')!
    const upstream = await startFakeUpstream()
    let n = 0
    upstream.setScript((request) => {
      const step = n++
      if (step >= 4) return door.respond(request, { text: 'Done.' }, step)
      const calls = [0, 1].map((j) => ({
        id: 'call_0',
        name: 'Bash',
        args: { command: `log ${step} ${j}`.padEnd(400, ' #') },
      }))
      return door.respond(request, { calls }, step)
    })
    const store = await createStore('memory:', { idleTtlMs: DAY })
    const elide = { ...EAGER, inputs: INPUTS.inputs }
    const proxy = await startProxy({ upstreamUrl: upstream.url, store, elide })
    const client = door.client({ stream: false })
    client.user('work')
    try {
      for (let turn = 0; turn <= 4; turn++) {
        const answer = await client.send(proxy.url)
        assert.equal(answer.status, 200, answer.raw.slice(0, 300))
        if (answer.calls.length === 0) break
        client.results(
          answer.calls,
          answer.calls.map((call) => parallel(String(call.args.command).slice(0, 7))),
        )
      }
    } finally {
      await proxy.close()
      await upstream.close()
    }
    const last = upstream.requests.filter((r) => r.pathname.endsWith(door.upstreamPath)).at(-1)!
    // Each result and the call it answers, in order: an elided call names its own result's id.
    const calls: any[] = []
    let elided = 0
    for (const message of last.json.messages) {
      calls.push(...(message.tool_calls ?? []))
      if (message.role !== 'tool') continue
      const command = JSON.parse(calls.shift().function.arguments).command as string
      const id = /^\[(#[0-9a-f]{4})\] Elided/.exec(command)?.[1]
      if (id !== undefined) {
        elided++
        assert.ok(message.content.startsWith(`[${id}`), `${command} / ${message.content}`)
      } else assert.ok(message.content.includes(`${command.slice(0, 7)} line 100`), command)
    }
    assert.ok(elided >= 4, `${elided} calls elided`)
  })
})

describe('when a batch pays', () => {
  /** Results one after another upstream, 200 bytes apart (each one's call between them). */
  const live = (chars: number[], standInChars = 40) => {
    let at = 0
    return chars.map((n, i) => {
      const id = `#${(i + 1).toString(16).padStart(4, '0')}`
      const result = { key: `k${i}`, id, chars: n, standInChars, item: i * 2, offset: at }
      at += n + 200
      return result
    })
  }

  /** One result, its item where its bytes begin. */
  const at = (key: string, id: string, chars: number, offset: number) => ({
    key,
    id,
    chars,
    standInChars: 40,
    item: offset,
    offset,
  })

  test('old results past the threshold, worth more over the horizon than the break costs', () => {
    // k4 is the newest turn's; k3, kept by --elide-keep 2, was sent before it.
    const results = live([20_000, 20_000, 20_000, 20_000, 500])
    const newestTurn = results[4]!.offset - 100
    assert.deepEqual(
      dueBatch(results, newestTurn, ELIDE)?.map((r) => r.key),
      ['k0', 'k1', 'k2'],
      'all but the last two, at once',
    )
    assert.equal(dueBatch(results, newestTurn, { ...ELIDE, thresholdTokens: 20_000 }), undefined)
    // The break sends k3 again: saving 15k tokens at a tenth of the price pays for it only
    // over four requests or more.
    assert.equal(dueBatch(results, newestTurn, { ...ELIDE, horizon: 3 }), undefined)
    assert.ok(dueBatch(results, newestTurn, { ...ELIDE, horizon: 4 }))
    // A cache-write premium makes the break dearer.
    assert.equal(
      dueBatch(results, newestTurn, { ...ELIDE, horizon: 4, writePremium: 1.25 }),
      undefined,
    )
    // A session of a few results so far is not broken for twenty requests it may never make.
    assert.ok(dueBatch(results, newestTurn, ELIDE, 5))
    assert.equal(dueBatch(results, newestTurn, ELIDE, 3), undefined)
  })

  test('the newest turn is neither elided nor counted as a cost of the break', () => {
    const all = { ...ELIDE, thresholdTokens: 1, keepResults: 0, horizon: 1 }
    // k2 came with the agent's last message: the model has not seen it yet.
    const results = live([8000, 8000, 60_000])
    const newestTurn = results[2]!.offset - 100
    assert.deepEqual(
      dueBatch(results, newestTurn, all)?.map((r) => r.key),
      ['k0', 'k1'],
    )
    // Were the whole request sent before (a first request), the break would resend k2 too:
    // more than one request's saving pays for.
    const end = results[2]!.offset + 60_000
    assert.equal(dueBatch(results.slice(0, 2), end, all), undefined)
  })

  test('the newest old results go where taking the older ones too would not pay', () => {
    const all = { ...ELIDE, thresholdTokens: 1, keepResults: 1, horizon: 5 }
    // k0, then 40,000 bytes of the agent's own messages, then k1 and the newest turn's k2.
    const results = [
      at('k0', '#0001', 2000, 0),
      at('k1', '#0002', 8000, 42_000),
      at('k2', '#0003', 8000, 50_500),
    ]
    // Both: 10k tokens sent again to save 2.5k; k1 alone saves 2k and sends 60 again.
    assert.deepEqual(
      dueBatch(results, 50_200, all)?.map((r) => r.key),
      ['k1'],
    )
    // A longer horizon pays for reaching back to k0 as well.
    assert.deepEqual(
      dueBatch(results, 50_200, { ...all, horizon: 200 })?.map((r) => r.key),
      ['k0', 'k1'],
    )
  })

  test('a result a stub names goes only with the stub', () => {
    const all = { ...ELIDE, thresholdTokens: 1, keepResults: 1, horizon: 20 }
    // k2 is a re-read of k0 sent as a stub, k3 the newest result.
    const results = live([8000, 8000, 300, 4000]).map((r) =>
      r.key === 'k2' ? { ...r, stubOf: ['#0001'] } : r,
    )
    const newestTurn = results[3]!.offset - 100
    assert.deepEqual(
      dueBatch(results, newestTurn, all)?.map((r) => r.key),
      ['k0', 'k1', 'k2'],
      'the stub goes with its result, short as it is',
    )
    // A stub that stays in view (the newest result) keeps its result: without it the stub
    // would be shown in full, and the batch would save nothing on it.
    const pinned = results.map((r) => (r.key === 'k3' ? { ...r, stubOf: ['#0002'] } : r))
    assert.deepEqual(
      dueBatch(pinned, newestTurn, all)?.map((r) => r.key),
      ['k0', 'k2'],
    )
  })

  test("--elide-inputs: a call's long strings go with or without its result, its break first", () => {
    const all = { ...INPUTS, thresholdTokens: 1, keepResults: 1, horizon: 20 }
    // k0's result is short (a heredoc's empty output); its call, 6,000 bytes before it, has a
    // string of 3,000 to elide. Then k1 and the newest turn's k2.
    const results = [
      { ...at('k0', '#0001', 60, 6100), input: { saved: 3000, item: 0, offset: 0 } },
      at('k1', '#0002', 8000, 6400),
      at('k2', '#0003', 4000, 14_600),
    ]
    const batch = dueBatch(results, results[2]!.offset - 100, all)
    assert.deepEqual(
      batch?.map((r) => [r.key, r.result, r.input !== undefined]),
      [
        ['k0', false, true],
        ['k1', true, false],
      ],
    )
    // Its break is where its call stands: a horizon that pays for k1 alone does not pay for
    // sending the 6,000 bytes before it again.
    const short = { ...all, horizon: 1 }
    assert.deepEqual(
      dueBatch(results, results[2]!.offset - 100, short)?.map((r) => r.key),
      ['k1'],
    )
  })

  test('--elide-inputs: which strings of a call are replaced', () => {
    const inputs = INPUTS.inputs!
    const call = (args: unknown) => ({
      id: 'c',
      type: 'function' as const,
      function: { name: 'Edit', arguments: typeof args === 'string' ? args : JSON.stringify(args) },
    })
    const long = 'x'.repeat(inputs.minChars)
    assert.equal(
      elidedInput(call({ command: long + ' $& $1', timeout: 5 }), '#0003', inputs),
      JSON.stringify({ command: '[#0003] Elided; recall shows it.', timeout: 5 }),
    )
    // Nested ones too (a list of edits); short ones stay.
    assert.equal(
      elidedInput(
        call({ edits: [{ old_string: long, new_string: 'y' }], path: 'a.ts' }),
        '#0a',
        inputs,
      ),
      JSON.stringify({
        edits: [{ old_string: '[#0a] Elided; recall shows it.', new_string: 'y' }],
        path: 'a.ts',
      }),
    )
    assert.equal(
      elidedInput(call({ command: long.slice(1), path: 'b' }), '#0003', inputs),
      undefined,
    )
    // Arguments that are not a JSON object go as they came.
    assert.equal(elidedInput(call(`not json ${long}`), '#0003', inputs), undefined)
    assert.equal(elidedInput(call([long]), '#0003', inputs), undefined)
  })

  test('short renderings stay; the stand-in keeps the bracket and names recall', () => {
    const low = { ...ELIDE, thresholdTokens: 1, keepResults: 0 }
    // Below the threshold, nothing is weighed.
    assert.equal(dueBatch(live([300, 300, 300, 300, 300, 300]), 3000, ELIDE), undefined)
    // A rendering shorter than two of its own stand-ins stays; one of two does not.
    assert.deepEqual(
      dueBatch(live([79, 80, 400], 40), 600, low)?.map((r) => r.key),
      ['k1', 'k2'],
    )
    assert.equal(dueBatch(live([79, 79], 40), 200, low), undefined)
    // What a batch saves is each rendering less its own stand-in.
    const tight = { ...low, horizon: 10 }
    assert.ok(dueBatch(live([1000], 100), 1600, tight))
    assert.equal(dueBatch(live([1000], 480), 1600, tight), undefined)
    assert.equal(
      standIn('[#000c src/app.ts lines 1-200 of 340 sha 1c9e04ab]\n1\tconst a = 1', ELIDE),
      '[#000c src/app.ts lines 1-200 of 340 sha 1c9e04ab] Elided; recall shows it.',
    )
  })
})

describe('--elide leaves a result that kept an earlier one’s id', () => {
  test('chat: a later text under an old call id (a rewrite, a fork’s copy) stays in view: its recall would show the earlier text', async () => {
    const upstream = await startFakeUpstream()
    const elide: ElideSettings = { ...ELIDE, thresholdTokens: 30, keepResults: 1, horizon: 200 }
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      elide,
    })
    const turn = (id: string, text: string) => [
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id, type: 'function', function: { name: 'Bash', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: id, content: text },
    ]
    const body = (turns: ReturnType<typeof turn>[]) => ({
      model: 'm',
      tools: [{ type: 'function', function: { name: 'Bash' } }],
      messages: [{ role: 'user', content: 'go' }, ...turns.flat()],
    })
    const session = { 'x-session-id': 'rewrites' }
    try {
      const first = turn('c0', output(100))
      assert.equal((await postChat(proxy.url, body([first]), session)).status, 200)
      // The same call id, after the same results, with another text: it keeps #0001.
      const later = [turn('c0', output(200)), turn('c1', output(1))]
      for (const k of [2, 3, 4]) {
        later.push(turn(`c${k}`, output(k)))
        assert.equal((await postChat(proxy.url, body(later), session)).status, 200)
      }
      const sent = upstream.requests.at(-1)!.json.messages as { content: string }[]
      const texts = sent.map((m) => (typeof m.content === 'string' ? m.content : ''))
      assert.ok(
        texts.some((t) => t.startsWith('[#0001]\nstep 200 line 1 ')),
        'the rewrite in full',
      )
      assert.ok(
        texts.some((t) => /^\[#0002\] Elided; recall shows it\.$/.test(t)),
        texts.join('\n'),
      )
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})

describe('--elide leaves what the summarisation needs', () => {
  const elide: ElideSettings = { ...ELIDE, thresholdTokens: 30, keepResults: 1, horizon: 200 }
  const fn = (name: string) => ({
    type: 'function',
    function: { name, description: name, parameters: { type: 'object', properties: {} } },
  })
  // Cline classic's tools: its summary comes back as the result of summarize_task.
  const tools = ['read_file', 'execute_command', 'summarize_task'].map(fn)
  const run = (id: string, output: string, name = 'execute_command') => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: id, content: `[${name}] Result:\n${output}` },
  ]
  /** A proxy with `--elide`, and the body the upstream got last. */
  async function withProxy(body: (url: string, last: () => any) => Promise<void>) {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      elide,
    })
    try {
      await body(proxy.url, () => upstream.requests.at(-1)!.json)
    } finally {
      await proxy.close()
      await upstream.close()
    }
  }
  const session = { 'x-session-id': 'summaries' }

  test('chat: a summary sent as a tool result (Cline’s summarize_task) is never elided', async () => {
    await withProxy(async (url, sent) => {
      const summary =
        '\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n' +
        'We ran the build; it failed in parse(). '.repeat(20)
      const history: object[] = [
        { role: 'system', content: 'You are Cline.' },
        { role: 'user', content: 'task' },
        ...run('c_sum', summary, 'summarize_task'),
      ]
      for (const k of [1, 2, 3]) {
        history.push(...run(`c${k}`, output(k)))
        const answer = await postChat(url, { model: 'm', tools, messages: history }, session)
        assert.equal(answer.status, 200)
      }
      const texts: string[] = sent().messages.map((m: { content: unknown }) => String(m.content))
      assert.ok(
        texts.some((t) => t.includes('it failed in parse()')),
        'the summary in full',
      )
      assert.ok(
        texts.some((t) => / Elided; recall shows it\.$/.test(t)),
        'others are elided',
      )
    })
  })

  test('chat: a request that offers no tools (Codex’s summarisation) makes no batch', async () => {
    await withProxy(async (url, sent) => {
      const history: object[] = [{ role: 'user', content: 'task' }, ...run('c1', output(1))]
      await postChat(url, { model: 'm', tools, messages: history }, session)
      history.push(...run('c2', output(2)))
      await postChat(url, { model: 'm', tools: [], messages: history }, session)
      const texts: string[] = sent().messages.map((m: { content: unknown }) => String(m.content))
      assert.ok(!texts.some((t) => t.includes('Elided')), texts.join('\n').slice(0, 500))
    })
  })

  // The prompts as the real CLIs sent them (Claude Code 2.1.332's /compact, Qwen Code 0.24.4's
  // compression), both with the agent's tools still offered.
  const captured = (file: string) =>
    readFileSync(new URL(`../fixtures/agents/${file}`, import.meta.url), 'utf8')
  const prompts = [
    captured('claude-code/compact-prompt-2.1.332.txt'),
    captured('qwen-code/compression-prompt.txt'),
  ]

  test('messages: nor one that ends with Claude Code’s prompt for a summary, its tools offered', async () => {
    const [claude] = prompts
    const tools = [{ name: 'Bash', description: 'Bash', input_schema: { type: 'object' } }]
    const use = (id: string) => ({
      role: 'assistant',
      content: [{ type: 'tool_use', id, name: 'Bash', input: { command: id } }],
    })
    const result = (id: string, k: number) => ({
      type: 'tool_result',
      tool_use_id: id,
      content: output(k),
    })
    for (const asked of [true, false]) {
      await withProxyAt('/v1/messages', async (post, sent) => {
        const messages: object[] = [{ role: 'user', content: 'task' }, use('c1')]
        await post({
          model: 'm',
          max_tokens: 100,
          tools,
          messages: [...messages, { role: 'user', content: [result('c1', 1)] }],
        })
        messages.push({ role: 'user', content: [result('c1', 1)] }, use('c2'))
        const last = [result('c2', 2), ...(asked ? [{ type: 'text', text: claude! }] : [])]
        await post({
          model: 'm',
          max_tokens: 100,
          tools,
          messages: [...messages, { role: 'user', content: last }],
        })
        // Without the prompt the same request makes its batch: the check can fail.
        assert.equal(sent().includes('Elided'), !asked, sent().slice(0, 300))
      })
    }
  })

  test('chat: nor one that ends with Qwen Code’s prompt for a summary, its tools offered', async () => {
    const [, qwen] = prompts
    for (const asked of [true, false]) {
      await withProxyAt('/v1/chat/completions', async (post, sent) => {
        const history: object[] = [{ role: 'user', content: 'task' }, ...run('c1', output(1))]
        await post({ model: 'm', tools, messages: history })
        history.push(...run('c2', output(2)))
        if (asked) history.push({ role: 'user', content: [{ type: 'text', text: qwen! }] })
        else history.push({ role: 'user', content: 'go on' })
        await post({ model: 'm', tools, messages: history })
        assert.equal(sent().includes('Elided'), !asked, sent().slice(0, 300))
      })
    }
  })

  /** A proxy with `--elide`, a poster to `path` and the body the upstream got last (as JSON). */
  async function withProxyAt(
    path: string,
    body: (post: (json: object) => Promise<void>, sent: () => string) => Promise<void>,
  ) {
    await withProxy(async (url, last) => {
      const post = async (json: object) => {
        const answer = await postTo(url + path, json, session)
        assert.equal(answer.status, 200)
      }
      await body(post, () => JSON.stringify(last()))
    })
  }

  test('responses: nor one that ends `compaction_trigger` (Codex’s built-in summarisation)', async () => {
    const upstream = await startFakeUpstream()
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      elide,
    })
    const call = (id: string, k: number) => [
      { type: 'function_call', call_id: id, name: 'shell', arguments: '{}' },
      { type: 'function_call_output', call_id: id, output: output(k) },
    ]
    const tools = [{ type: 'function', name: 'shell', parameters: { type: 'object' } }]
    try {
      const input: object[] = [{ role: 'user', content: 'task' }, ...call('c1', 1)]
      await postTo(`${proxy.url}/v1/responses`, { model: 'm', tools, input }, session)
      input.push(...call('c2', 2), { type: 'compaction_trigger' })
      await postTo(`${proxy.url}/v1/responses`, { model: 'm', tools, input }, session)
      const sentInput = JSON.stringify(upstream.requests.at(-1)!.json.input)
      assert.ok(sentInput.includes('compaction_trigger'))
      assert.ok(!sentInput.includes('Elided'), sentInput.slice(0, 500))
    } finally {
      await proxy.close()
      await upstream.close()
    }
  })
})
