/**
 * Message identity by place, not by look-alike content: property-based sessions through each
 * front door (chat completions, Responses, Anthropic Messages), streaming and not, after a
 * restart on one SQLite file and across two proxies on one Redis. Turns look alike (same user
 * text, same reply, same recall arguments), the model server reuses call ids (`call_0`, `""`)
 * and different calls print the same output. Whatever the session:
 *  - every tool result the upstream sees starts with an id bracket, and no two results of one
 *    upstream history share an id (a recall's answer has one of its own);
 *  - every upstream request's history starts with the previous request's bytes;
 *  - every upstream request carries every tool result and recall answer given so far, once;
 *  - the client never sees a recall call, and every recall answers from the right stored text:
 *    at the end, a recall of each id returns that result's full text.
 * Black-box over real HTTP: a scripted fake model behind the proxy, a small agent in front.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { createStore, type Store } from '../../src/store/index.js'
import { DOORS, type Door, type DoorCall } from '../helpers/doors.js'
import {
  startFakeUpstream,
  type FakeResponse,
  type FakeScript,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import { prefixViolations } from '../helpers/model.js'
import { loop, startProxy, type TestProxy } from '../helpers/proxy.js'
import { startRedis, type TestRedis } from '../helpers/redis-server.js'

const DAY = 86_400_000

// ── What a session is made of ──

/** How the model server names a call: always `call_0`, always empty, or a fresh id. */
type IdKind = 'call_0' | '' | 'unique'

function lines(count: number, line: (i: number) => string): string {
  return Array.from({ length: count }, (_, i) => line(i + 1)).join('\n') + '\n'
}

/** What the agent's tools print: a tiny set, so identical outputs of different calls occur. */
const OUTPUTS = {
  status: ' M src/app.ts\n?? notes.txt\n',
  empty: '',
  log60: lines(60, (i) => `${(0xabc000 + i).toString(16)} commit number ${i}`),
  // Over 400 lines: the model sees it capped, recall must still give all of it.
  log450: lines(450, (i) => `src/dir${i % 7}/file${i}.ts: match ${i}`),
} as const
type OutputName = keyof typeof OUTPUTS

/** A recall call the model makes. */
interface RecallAsk {
  /** An index into the ids the model sees (modulo their count), or an id itself. */
  target: number | string
  offset?: number
  limit?: number
  id: IdKind
}
/** Calls of the agent's Bash tool, with a recall beside them (first) when `recall` is set. */
interface ToolStep {
  kind: 'tools'
  calls: { command: string; id: IdKind; output: OutputName; marker?: string }[]
  recall?: RecallAsk
}
/** A recall alone: the proxy answers it and asks the model again. */
interface RecallStep extends RecallAsk {
  kind: 'recall'
}
/** Recalls of these ids, side by side, each in full: the end of a session. */
interface CheckStep {
  kind: 'check'
  targets: string[]
}
interface TextStep {
  kind: 'text'
  text: string
}
type Step = ToolStep | RecallStep
type Answer = Step | CheckStep | TextStep

/** One user turn: the model's steps (tool calls, recalls), then its text reply. */
interface Turn {
  user: string
  steps: Step[]
  reply: string
}

function outputOf(call: ToolStep['calls'][number]): string {
  const text = OUTPUTS[call.output]
  return call.marker === undefined ? text : text + call.marker + '\n'
}

// ── The fake model ──

const ID_BRACKET = /^\[(#[0-9a-f]{4,})[\] ]/

function idOf(text: string | undefined): string | undefined {
  return text === undefined ? undefined : ID_BRACKET.exec(text)?.[1]
}

function clip(text: string | undefined, max = 160): string {
  if (text === undefined) return '(none)'
  const shown = JSON.stringify(text)
  return shown.length > max ? shown.slice(0, max) + '…' : shown
}

/** What a recall of `stored` should answer, per the spec: the lines asked for, exactly. */
function expectedRecall(
  stored: string,
  target: string,
  offset: number,
  limit: number,
): { bracket: RegExp; body?: string } {
  const all = stored === '' ? [] : stored.replace(/\n$/, '').split('\n')
  const escaped = target.replace('#', '\\#')
  if (all.length === 0) return { bracket: new RegExp(`^\\[#\\w+ recall ${escaped} empty\\]$`) }
  if (offset > all.length)
    return { bracket: new RegExp(`^\\[#\\w+\\] Result ${escaped} has ${all.length} lines;`) }
  const end = Math.min(all.length, offset + limit - 1)
  return {
    bracket: new RegExp(`^\\[#\\w+ recall ${escaped} lines ${offset}-${end} of ${all.length}\\]$`),
    body: all.slice(offset - 1, end).join('\n'),
  }
}

/**
 * A scripted model that says its planned answers in order, whoever asks (the client, or the
 * proxy in a recall round), reading each request to check what the proxy shows it: every result
 * so far, once; the new ones with ids; recall answers from the right text.
 */
/** A recall the model made: the id it asked for and the lines. */
interface Recalled {
  target: string
  offset: number
  limit: number
}

class FakeModel {
  readonly queue: Answer[] = []
  readonly problems: string[] = []
  /** Every id the model was shown, with the full text it stands for. */
  readonly full = new Map<string, string>()
  /** The outputs of the last tool calls: what the client's tools print for them. */
  lastOutputs: string[] = []
  private expected = 0
  /** What the model's last answer asked for: the next request ends with their results. */
  private pending: { recalls: Recalled[]; outputs: string[] } | undefined
  private requestNumber = 0
  private answerNumber = 0
  private callNumber = 0

  constructor(private readonly door: Door) {}

  problem(text: string): void {
    this.problems.push(text)
  }

  readonly script: FakeScript = (request) => this.answer(request)

  private answer(request: RecordedRequest): FakeResponse {
    const where = `upstream request ${++this.requestNumber}`
    const results = this.door.results(request)
    if (results.length !== this.expected)
      this.problem(
        `${where} carries ${results.length} tool results, not the ${this.expected} given so far: ${results.map((r) => idOf(r) ?? clip(r, 30)).join(' ')}`,
      )
    const pending = this.pending
    this.pending = undefined
    if (pending !== undefined) {
      const count = pending.recalls.length + pending.outputs.length
      const tail = results.slice(Math.max(0, results.length - count))
      for (const recall of pending.recalls) {
        const answer = tail.shift()
        this.checkRecall(answer, recall, where)
        if (answer !== undefined) this.learn(answer, answer, where)
      }
      pending.outputs.forEach((output, i) => this.learn(tail[i], output, where))
    }

    const next = this.queue.shift()
    if (next === undefined) {
      this.problem(`${where}: the model was asked more than planned`)
      return { status: 500, body: '{"error":{"message":"the fake model ran out of answers"}}' }
    }
    const n = ++this.answerNumber
    if (next.kind === 'text') return this.door.respond(request, { text: next.text }, n)
    const asks: RecallAsk[] =
      next.kind === 'recall'
        ? [next]
        : next.kind === 'check'
          ? next.targets.map((target) => ({ target, id: 'unique' }))
          : next.recall
            ? [next.recall]
            : []
    const bash = next.kind === 'tools' ? next.calls : []
    const calls: DoorCall[] = []
    const recalls: Recalled[] = []
    for (const ask of asks) {
      const seen = [...new Set(results.map(idOf).filter((id) => id !== undefined))]
      const target =
        typeof ask.target === 'string'
          ? ask.target
          : (seen[ask.target % Math.max(1, seen.length)] ?? '#0001')
      const args: Record<string, unknown> = { id: target }
      if (ask.offset !== undefined) args.offset = ask.offset
      if (ask.limit !== undefined) args.limit = ask.limit
      calls.push({ id: this.callId(ask.id), name: 'recall', args })
      recalls.push({ target, offset: ask.offset ?? 1, limit: ask.limit ?? 2000 })
    }
    for (const call of bash)
      calls.push({ id: this.callId(call.id), name: 'Bash', args: { command: call.command } })
    const outputs = bash.map(outputOf)
    if (outputs.length > 0) this.lastOutputs = outputs
    this.pending = { recalls, outputs }
    this.expected += calls.length
    return this.door.respond(request, { calls }, n)
  }

  private callId(kind: IdKind): string {
    if (kind !== 'unique') return kind
    return `${this.door.name === 'messages' ? 'toolu' : 'call'}_u${++this.callNumber}`
  }

  /** A new result the model is shown: its id must be new, or name the same text. */
  private learn(rendered: string | undefined, full: string, where: string): void {
    const id = idOf(rendered)
    if (id === undefined) {
      this.problem(`${where}: a new tool result without an id bracket: ${clip(rendered)}`)
      return
    }
    const known = this.full.get(id)
    if (known !== undefined && known !== full)
      this.problem(`${where}: ${id} names two different results: ${clip(known)} and ${clip(full)}`)
    if (known === undefined) this.full.set(id, full)
  }

  private checkRecall(answer: string | undefined, asked: Recalled, where: string): void {
    const what = `recall of ${asked.target} (offset ${asked.offset}, limit ${asked.limit})`
    if (answer === undefined) {
      this.problem(`${where}: no answer to the ${what}`)
      return
    }
    const stored = this.full.get(asked.target)
    if (stored === undefined) {
      if (!/No stored result/.test(answer))
        this.problem(`${where}: the ${what} of an id never given answered ${clip(answer)}`)
      return
    }
    const expected = expectedRecall(stored, asked.target, asked.offset, asked.limit)
    const newline = answer.indexOf('\n')
    const first = newline < 0 ? answer : answer.slice(0, newline)
    const body = newline < 0 ? undefined : answer.slice(newline + 1)
    if (!expected.bracket.test(first) || body !== expected.body)
      this.problem(
        `${where}: the ${what} answered ${clip(answer)}; expected ${expected.bracket} and ${clip(expected.body)}`,
      )
  }
}

// ── Where the proxy runs ──

interface Deployment {
  /** The proxy that takes the client's request number `n` (from 0). */
  url(n: number): string
  /** Runs before the client's request number `n`; `check` before the final recalls. */
  before(n: number | 'check'): Promise<void>
  close(): Promise<void>
}

type Deploy = (upstreamUrl: string) => Promise<Deployment>

/** One proxy on a memory store. */
const single: Deploy = async (upstreamUrl) => {
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({ upstreamUrl, store })
  return {
    url: () => proxy.url,
    before: async () => {},
    async close() {
      await proxy.close()
      await store.close()
    },
  }
}

/** A proxy on a SQLite file, closed before request `at` and started again on the same file. */
function restarting(at: number): Deploy {
  return async (upstreamUrl) => {
    const dir = mkdtempSync(join(tmpdir(), 'lembas-identity-'))
    const spec = 'sqlite:' + join(dir, 'store.db')
    let store = await createStore(spec, { idleTtlMs: DAY })
    let proxy = await startProxy({ upstreamUrl, store })
    let restarted = false
    return {
      url: () => proxy.url,
      async before(n) {
        if (restarted || (n !== 'check' && n < at)) return
        restarted = true
        await proxy.close()
        await store.close()
        store = await createStore(spec, { idleTtlMs: DAY })
        proxy = await startProxy({ upstreamUrl, store })
      },
      async close() {
        await proxy.close()
        await store.close()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
}

/** Two proxies, each with its own Redis client on one server, taking requests in turn. */
function replicas(redisUrl: () => string): Deploy {
  return async (upstreamUrl) => {
    const stores: Store[] = [
      await createStore(redisUrl(), { idleTtlMs: DAY }),
      await createStore(redisUrl(), { idleTtlMs: DAY }),
    ]
    const proxies: TestProxy[] = []
    for (const store of stores) proxies.push(await startProxy({ upstreamUrl, store }))
    return {
      url: (n) => proxies[n % 2]!.url,
      before: async () => {},
      async close() {
        for (const proxy of proxies) await proxy.close()
        for (const store of stores) await store.close()
      },
    }
  }
}

// ── One session, start to end ──

interface SessionResult {
  /** Everything found wrong, in order. */
  problems: string[]
  /** The upstream requests of this door, in order. */
  sent: RecordedRequest[]
}

/**
 * Runs the turns through a fresh fake model and deployment, then (with `checkRecalls`) one more
 * turn where the model recalls every id it was shown, each in full; checks every upstream
 * request.
 */
async function runSession(
  door: Door,
  turns: readonly Turn[],
  options: { stream: boolean; deploy: Deploy; checkRecalls: boolean },
): Promise<SessionResult> {
  const upstream = await startFakeUpstream()
  const model = new FakeModel(door)
  upstream.setScript(model.script)
  const deployment = await options.deploy(upstream.url)
  const client = door.client({ stream: options.stream })
  let requests = 0
  const problems = model.problems

  async function turn(
    user: string,
    steps: readonly (Step | CheckStep)[],
    reply: string,
  ): Promise<void> {
    client.user(user)
    model.queue.push(...steps, { kind: 'text', text: reply })
    for (let step = 0; ; step++) {
      if (step > 10) throw new Error(`turn ${JSON.stringify(user)} did not end`)
      await deployment.before(requests)
      const answer = await client.send(deployment.url(requests++))
      if (answer.status !== 200)
        throw new Error(
          `the proxy answered ${answer.status}: ${answer.raw.slice(0, 300)}\n` +
            problems.slice(0, 6).join('\n'),
        )
      if (answer.calls.some((call) => call.name === 'recall'))
        problems.push(
          `turn ${JSON.stringify(user)}: the client saw a recall call: ${clip(answer.raw, 300)}`,
        )
      const calls = answer.calls.filter((call) => call.name !== 'recall')
      if (calls.length === 0) {
        if (answer.text !== reply)
          problems.push(
            `turn ${JSON.stringify(user)}: the client got the reply ${clip(answer.text)}, not ${clip(reply)}`,
          )
        break
      }
      if (calls.length !== model.lastOutputs.length)
        problems.push(
          `turn ${JSON.stringify(user)}: the client got ${calls.length} tool calls, the model made ${model.lastOutputs.length}`,
        )
      client.results(calls, model.lastOutputs)
    }
    if (model.queue.length > 0) {
      problems.push(`turn ${JSON.stringify(user)} ended with ${model.queue.length} answers unsaid`)
      model.queue.length = 0
    }
  }

  try {
    for (const t of turns) await turn(t.user, t.steps, t.reply)
    if (options.checkRecalls) {
      await deployment.before('check')
      const ids = [...model.full.keys()].sort(
        (a, b) => parseInt(a.slice(1), 16) - parseInt(b.slice(1), 16),
      )
      // A round answers at most max_calls recalls: one turn for each such share of them.
      const share = loop.proxy.recall.max_calls
      for (let at = 0; at < ids.length; at += share)
        await turn('check', [{ kind: 'check', targets: ids.slice(at, at + share) }], 'Checked.')
    }
  } finally {
    await deployment.close()
    await upstream.close()
  }

  const sent = upstream.requests.filter((r) => r.pathname.endsWith(door.upstreamPath))
  sent.forEach((request, i) => {
    const where = `upstream request ${i + 1}`
    const results = door.results(request)
    const ids = results.map(idOf)
    results.forEach((text, k) => {
      if (ids[k] === undefined)
        problems.push(`${where}: tool result ${k + 1} has no id bracket: ${clip(text)}`)
    })
    const shared = ids.filter((id, k) => id !== undefined && ids.indexOf(id) !== k)
    if (shared.length > 0)
      problems.push(
        `${where}: tool results share ${[...new Set(shared)].join(', ')}: ${ids.join(' ')}`,
      )
    if (i > 0 && door.fixedParts(request) !== door.fixedParts(sent[i - 1]!))
      problems.push(`${where} changes the system prompt or the tools`)
  })
  problems.push(
    ...prefixViolations(upstream.requests, { path: door.upstreamPath, field: door.historyField }),
  )
  return { problems, sent }
}

/** The test's verdict: no problems (the first few shown). */
function assertClean(result: SessionResult): void {
  const shown = result.problems.slice(0, 8)
  if (result.problems.length > shown.length)
    shown.push(`… and ${result.problems.length - shown.length} more`)
  assert.deepEqual(shown, [])
}

// ── Generators ──

const idKind = fc.constantFrom<IdKind>('call_0', '', 'unique')

const recallAsk: fc.Arbitrary<RecallAsk> = fc
  .record({
    target: fc.nat({ max: 5 }),
    window: fc.constantFrom({}, { offset: 1, limit: 2 }, { offset: 40, limit: 2 }),
    id: idKind,
  })
  .map(({ target, window, id }) => ({ target, ...window, id }))

const toolStep: fc.Arbitrary<ToolStep> = fc
  .record({
    calls: fc.array(
      fc.record({
        command: fc.constantFrom('git status --short', 'ls src'),
        id: idKind,
        output: fc.constantFrom<OutputName>('status', 'empty', 'log60', 'log450'),
      }),
      { minLength: 1, maxLength: 2 },
    ),
    // One step in four also calls recall, beside the agent's tool.
    recall: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      { arbitrary: recallAsk, weight: 1 },
    ),
  })
  .map(({ calls, recall }) => ({ kind: 'tools' as const, calls, ...(recall ? { recall } : {}) }))

const recallStep: fc.Arbitrary<RecallStep> = recallAsk.map((ask) => ({
  kind: 'recall' as const,
  ...ask,
}))

const lookAlikeTurn: fc.Arbitrary<Turn> = fc.record({
  user: fc.constantFrom('show', 'again'),
  steps: fc.array(fc.oneof(toolStep, recallStep), { maxLength: 2 }),
  reply: fc.constantFrom('Seen.', 'Done.'),
})

/** Sessions of look-alike turns, with reused and empty call ids and repeated outputs. */
const lookAlikeSession = fc.array(lookAlikeTurn, { minLength: 3, maxLength: 6 })

/**
 * The same sessions with nothing alike: unique user texts, replies and call ids, and a line
 * that makes every output unique. The harness's control: these must pass on any correct proxy.
 */
function distinct(turns: readonly Turn[]): Turn[] {
  let call = 0
  return turns.map((turn, i) => ({
    user: `${turn.user} ${i + 1}`,
    reply: `${turn.reply} (${i + 1})`,
    steps: turn.steps.map((step) =>
      step.kind === 'tools'
        ? {
            kind: 'tools',
            calls: step.calls.map((c) => ({ ...c, id: 'unique', marker: `# call ${++call}` })),
            ...(step.recall ? { recall: { ...step.recall, id: 'unique' } } : {}),
          }
        : { ...step, id: 'unique' },
    ),
  }))
}

const RUNS = 15

function property<T>(arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>) {
  return fc.assert(fc.asyncProperty(arbitrary, predicate), {
    numRuns: RUNS,
    // The problems found go in the failure message (node:test does not print an error's cause).
    includeErrorInReport: true,
    // Shrinking a failure re-runs whole sessions: keep the file's time bounded.
    plugins: [fc.interruptAfterTimeLimit(5_000)],
  })
}

/** Where a session runs: one proxy, one restarted before request `at`, or two replicas. */
type Place = { kind: 'one proxy' } | { kind: 'restart'; at: number } | { kind: 'two replicas' }

const place: fc.Arbitrary<Place> = fc.oneof(
  fc.constant({ kind: 'one proxy' as const }),
  fc.record({ kind: fc.constant('restart' as const), at: fc.integer({ min: 1, max: 12 }) }),
  fc.constant({ kind: 'two replicas' as const }),
)

let redis: TestRedis | undefined
before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis?.stop()
})

function deployAt(where: Place): Deploy {
  if (where.kind === 'restart') return restarting(where.at)
  if (where.kind === 'two replicas') return replicas(() => redis!.url)
  return single
}

// ── The two cases from the issue, exactly ──

function gitStatusTwice(): Turn[] {
  const call = { command: 'git status --short', id: 'call_0' as const, output: 'status' as const }
  return [
    {
      user: 'status',
      steps: [
        { kind: 'tools', calls: [call] },
        { kind: 'tools', calls: [call] },
      ],
      reply: 'Done.',
    },
  ]
}

function showShowThird(): Turn[] {
  const log = { command: 'git log --oneline', id: 'unique' as const, output: 'log60' as const }
  return [
    { user: 'run', steps: [{ kind: 'tools', calls: [log] }], reply: 'Ran.' },
    {
      user: 'show',
      steps: [{ kind: 'recall', target: '#0001', offset: 1, limit: 2, id: 'unique' }],
      reply: 'Seen.',
    },
    {
      user: 'show',
      steps: [{ kind: 'recall', target: '#0001', offset: 40, limit: 2, id: 'unique' }],
      reply: 'Seen.',
    },
    { user: 'third', steps: [], reply: 'Ok.' },
  ]
}

for (const door of DOORS) {
  for (const stream of [false, true]) {
    describe(`identity by place through ${door.name} (${stream ? 'streaming' : 'non-streaming'})`, () => {
      test('an upstream that names every call call_0: git status twice, same output, two ids', async () => {
        const result = await runSession(door, gitStatusTwice(), {
          stream,
          deploy: single,
          checkRecalls: false,
        })
        const last = result.sent.at(-1)!
        assert.deepEqual(door.results(last).map(idOf), ['#0001', '#0002'])
        assertClean(result)
      })

      test('show, show, third: each recall exchange restored once, in its place, and #0003 kept', async () => {
        const result = await runSession(door, showShowThird(), {
          stream,
          deploy: single,
          checkRecalls: false,
        })
        const results = door.results(result.sent.at(-1)!)
        assert.deepEqual(results.map(idOf), ['#0001', '#0002', '#0003'])
        assert.equal(
          results[1],
          '[#0002 recall #0001 lines 1-2 of 60]\n' +
            OUTPUTS.log60.split('\n').slice(0, 2).join('\n'),
        )
        assert.equal(
          results[2],
          '[#0003 recall #0001 lines 40-41 of 60]\n' +
            OUTPUTS.log60.split('\n').slice(39, 41).join('\n'),
        )
        assertClean(result)
      })

      test('property (the harness control): sessions without look-alikes, anywhere', async () => {
        await property(
          fc.record({ turns: lookAlikeSession.map(distinct), where: place }),
          async ({ turns, where }) => {
            assertClean(
              await runSession(door, turns, {
                stream,
                deploy: deployAt(where),
                checkRecalls: true,
              }),
            )
          },
        )
      })

      test('property: look-alike turns, reused and empty call ids, identical outputs', async () => {
        await property(lookAlikeSession, async (turns) => {
          assertClean(await runSession(door, turns, { stream, deploy: single, checkRecalls: true }))
        })
      })
    })
  }
}

describe('identity by place across a restart and across replicas', () => {
  for (const door of DOORS) {
    test(`${door.name}: look-alike sessions, the proxy restarted on the same SQLite file mid-session`, async () => {
      await property(
        fc.record({
          turns: lookAlikeSession,
          stream: fc.boolean(),
          at: fc.integer({ min: 1, max: 12 }),
        }),
        async ({ turns, stream, at }) => {
          assertClean(
            await runSession(door, turns, { stream, deploy: restarting(at), checkRecalls: true }),
          )
        },
      )
    })

    test(`${door.name}: look-alike sessions, two proxies on one Redis taking requests in turn`, async () => {
      await property(
        fc.record({ turns: lookAlikeSession, stream: fc.boolean() }),
        async ({ turns, stream }) => {
          assertClean(
            await runSession(door, turns, {
              stream,
              deploy: replicas(() => redis!.url),
              checkRecalls: true,
            }),
          )
        },
      )
    })
  }
})
