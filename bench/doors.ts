/**
 * Added latency per front door: the same kind of agent session sent to POST /v1/chat/completions,
 * /v1/messages (in Claude Code's shape) and /v1/responses (in Codex's shape), each door side by
 * side with the floor and with direct, in one alternating loop. The chat door's figures of this
 * loop are the reference of the other doors' (`added / chat door`): measured in the same
 * iterations, on the same machine state.
 *
 * run.ts calls doorsPhase once per size (phases `doors` and `doors-stream`) and adds
 * doorsReport's tables and targets to its own. See bench/README.md.
 */
import type { Dispatcher } from 'undici'
import {
  dispatcherFor,
  headersFor,
  round,
  send,
  summarize,
  type Sample,
  type Summary,
  type Target,
} from './client.js'
import { DOORS, shapeOf, type Door } from './shapes.js'
import { seedOf, sessionFor, type AgentSession, type SizeClass } from './workload.js'

export { DOORS, type Door }

/** The target of the issue: each door's added p50 at 1 MB within this factor of the chat door's. */
export const DOOR_RATIO_TARGET = 1.2

export interface DoorsContext {
  /** `direct` first, then the servers under test (stateful ones get each session's first request). */
  targets: Target[]
  doors: readonly Door[]
  seed: number
  /** --iterations, when given (streaming: half). */
  iterations: number | undefined
  /** Tags the proxies' log lines with the part of the run they belong to. */
  setLabel(label: string): void
  /**
   * Notes how many lines each lembas has logged; the function returned waits until each has
   * logged `count` more (a stream's line may come after the client saw its last byte).
   */
  mark?: () => (count: number) => Promise<void>
  log(message: string): void
}

export interface DoorRow {
  door: Door
  target: string
  total: Summary
  ttfb: Summary
  /** Latency minus direct's on the same door in the same iteration. */
  added: Summary
  addedTtfb: Summary
  errors: number
}

export interface DoorsPhase {
  kind: 'doors' | 'doors-stream'
  size: string
  iterations: number
  seconds: number
  doors: Door[]
  bodyBytes: Partial<Record<Door, Summary>>
  newBytesPerRequest: Partial<Record<Door, Summary>>
  rows: DoorRow[]
  /** Filled in by run.ts from the proxies' log lines: per lembas target, per door. */
  lembas?: Record<string, Partial<Record<Door, DoorLog>>>
}

/** A UUID-shaped id derived from a name: where Claude Code and Codex put their session's id. */
function uuidOf(name: string): string {
  const hex = [1, 2, 3, 4].map((i) => seedOf(name, i).toString(16).padStart(8, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** The headers each agent sends; the session is in the body (Claude Code) or in both (Codex). */
function headersOf(door: Door, target: Target, name: string, id: string): Record<string, string> {
  if (door === 'chat') return headersFor(target, name)
  if (door === 'messages')
    return {
      'content-type': 'application/json',
      'x-api-key': 'bench-key',
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'claude-code-20250219',
      ...target.headers,
    }
  return {
    'content-type': 'application/json',
    authorization: 'Bearer bench-key',
    originator: 'codex_cli_rs',
    session_id: id,
    ...target.headers,
  }
}

interface DoorSession {
  door: Door
  session: AgentSession
  headers: (target: Target) => Record<string, string>
}

/**
 * `iterations` measured steps: in each, every door's session takes one step and its body goes to
 * every target, doors and targets in an order that rotates from one iteration to the next.
 */
async function alternateDoors(
  ctx: DoorsContext,
  size: SizeClass,
  stream: boolean,
  iterations: number,
  label: string,
) {
  const { targets, doors } = ctx
  const clients = new Map<string, Dispatcher>(targets.map((t) => [t.name, dispatcherFor(t, 1)]))
  const key = (door: Door, target: string) => `${door} ${target}`
  const samples = new Map<string, Sample[]>()
  const errors = new Map<string, number>()
  for (const door of doors)
    for (const t of targets) {
      samples.set(key(door, t.name), [])
      errors.set(key(door, t.name), 0)
    }
  const bodyBytes = new Map<Door, number[]>(doors.map((d) => [d, []]))
  const deltaBytes = new Map<Door, number[]>(doors.map((d) => [d, []]))
  let firstError: string | undefined
  const hit = async (s: DoorSession, target: Target, body: Buffer): Promise<Sample> => {
    const sample = await send(clients.get(target.name)!, s.headers(target), body, shapeOf(s.door))
    if (sample.status !== 200) {
      const k = key(s.door, target.name)
      errors.set(k, errors.get(k)! + 1)
      firstError ??= `${target.name} (${s.door}) answered ${sample.status}: ${sample.text}`
    }
    return sample
  }
  let iteration = 0
  for (let n = 0; iteration < iterations; n++) {
    // The same seed on every door: the sessions make the same calls, each in its door's shape.
    const seed = seedOf(ctx.seed, label, size.name, stream ? 1 : 0, n)
    const sessions: DoorSession[] = doors.map((door) => {
      const name = `bench-${label}-${size.name}-${stream ? 's' : 'n'}-${door}-${n}`
      const id = uuidOf(name)
      return {
        door,
        session: sessionFor(size, seed, stream, door, id),
        headers: (target) => headersOf(door, target, name, id),
      }
    })
    // Each session's first request, unmeasured: afterwards lembas knows the whole history.
    ctx.setLabel(`${label}:prime`)
    const settled = ctx.mark?.()
    for (const s of sessions)
      for (const target of targets) if (target.stateful) await hit(s, target, s.session.base())
    await settled?.(sessions.length)
    ctx.setLabel(label)
    let steps = 0
    for (let k = 0; k < size.sessionSteps && iteration < iterations; k++, iteration++, steps++) {
      const bodies = sessions.map((s) => {
        const body = s.session.next()
        bodyBytes.get(s.door)!.push(body.length)
        deltaBytes.get(s.door)!.push(s.session.lastDeltaBytes)
        return body
      })
      for (let d = 0; d < sessions.length; d++) {
        const at = (iteration + d) % sessions.length
        const s = sessions[at]!
        for (let j = 0; j < targets.length; j++) {
          const target = targets[(iteration + d + j) % targets.length]!
          samples.get(key(s.door, target.name))!.push(await hit(s, target, bodies[at]!))
        }
      }
    }
    // Every line of these sessions in before the next ones' mark.
    await settled?.(sessions.length * (1 + steps))
  }
  await Promise.all([...clients.values()].map((c) => c.close()))
  const rows: DoorRow[] = []
  for (const door of doors) {
    const direct = samples.get(key(door, 'direct'))!
    for (const target of targets) {
      const mine = samples.get(key(door, target.name))!
      rows.push({
        door,
        target: target.name,
        total: summarize(mine.map((s) => s.totalMs)),
        ttfb: summarize(mine.map((s) => s.ttfbMs)),
        added: summarize(mine.map((s, i) => s.totalMs - direct[i]!.totalMs)),
        addedTtfb: summarize(mine.map((s, i) => s.ttfbMs - direct[i]!.ttfbMs)),
        errors: errors.get(key(door, target.name))!,
      })
    }
  }
  const perDoor = (values: Map<Door, number[]>) =>
    Object.fromEntries([...values].map(([door, v]) => [door, summarize(v)]))
  return { rows, bodyBytes: perDoor(bodyBytes), deltaBytes: perDoor(deltaBytes), firstError }
}

/** One size: warm-up, then the measured alternating iterations, every door. */
export async function doorsPhase(
  ctx: DoorsContext,
  size: SizeClass,
  stream: boolean,
): Promise<DoorsPhase> {
  // Twice the latency phase's iterations by default: a door's ratio to the chat door is read
  // from two p50s, and at 1 MB 60 iterations are only 3 sessions of each door.
  const given = ctx.iterations ?? size.iterations * 2
  const n = stream ? Math.max(2, Math.round(given / 2)) : given
  const kind = stream ? 'doors-stream' : 'doors'
  ctx.log(
    `${kind} ${size.name} (${ctx.doors.join(', ')}): warm-up ${size.warmup}, then ${n} alternating iterations`,
  )
  await alternateDoors(ctx, size, stream, size.warmup, `warm-${kind}`)
  const started = performance.now()
  const result = await alternateDoors(ctx, size, stream, n, `${kind}-${size.name}`)
  if (result.firstError) ctx.log(`  first error: ${result.firstError}`)
  return {
    kind,
    size: size.name,
    iterations: n,
    seconds: round((performance.now() - started) / 1000, 1),
    doors: [...ctx.doors],
    bodyBytes: result.bodyBytes,
    newBytesPerRequest: result.deltaBytes,
    rows: result.rows,
  }
}

// ---------------------------------------------------------------------------------------------
// What lembas logged

/** A lembas log line, as run.ts keeps it. */
export interface LogEvent {
  label: string
  event: string
  /** The line's `door` field (before src/doors: `format`, absent on chat, `anthropic`). */
  door: string | undefined
  newResults: number
}

export interface DoorLog {
  requests: number
  newResultsPerRequest: number
  /** The log event counted: `request` (info), or `rebuilt` (debug, the Responses door's only). */
  from: string
}

const doorOf = (name: string | undefined): Door | undefined =>
  name === undefined || name === 'chat'
    ? 'chat'
    : name === 'anthropic' || name === 'messages'
      ? 'messages'
      : name === 'responses'
        ? 'responses'
        : undefined

/** Per door, what lembas's log lines of a phase say: its `request` lines, else `rebuilt`. */
export function doorLogs(events: readonly LogEvent[], label: string) {
  const out: Partial<Record<Door, DoorLog>> = {}
  for (const door of DOORS) {
    const mine = events.filter((e) => e.label === label && doorOf(e.door) === door)
    const requests = mine.filter((e) => e.event === 'request')
    // Before src/doors, the Responses door's `rebuilt` line (debug) stood for a `request` line.
    const used = requests.length > 0 ? requests : mine.filter((e) => e.event === 'rebuilt')
    if (used.length === 0) continue
    out[door] = {
      requests: used.length,
      newResultsPerRequest: round(used.reduce((a, e) => a + e.newResults, 0) / used.length, 2),
      from: used[0]!.event,
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Report

export interface Check {
  target: string
  measured: string
  pass: boolean | undefined
}

type Table = (header: string[], rows: (string | number)[][]) => string

const ms = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(2)
const ratioOf = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b <= 0
    ? undefined
    : a / b
const ratio = (a: number | undefined, b: number | undefined) => {
  const r = ratioOf(a, b)
  return r === undefined ? 'n/a' : r.toFixed(2) + 'x'
}
const kb = (s: Summary | undefined) => (s ? (s.p50 / 1024).toFixed(s.p50 < 10240 ? 1 : 0) : 'n/a')

/** The tables of the `doors` and `doors-stream` phases. */
export function doorsTables(phases: readonly DoorsPhase[], table: Table): string[] {
  const out: string[] = []
  for (const phase of phases) {
    const latency = phase.kind === 'doors'
    const find = (door: Door, target: string) =>
      phase.rows.find((r) => r.door === door && r.target === target)
    const add = (r: DoorRow | undefined) => (r ? (latency ? r.added : r.addedTtfb) : undefined)
    const raw = (r: DoorRow) => (latency ? r.total : r.ttfb)
    out.push(
      '',
      `${latency ? 'Added latency' : 'Streaming time to first byte'} per front door, ${phase.size} ` +
        `(bodies ${phase.doors.map((d) => `${d} ${kb(phase.bodyBytes[d])}`).join(', ')} KB p50; ` +
        `new per request ${phase.doors.map((d) => kb(phase.newBytesPerRequest[d])).join(' / ')} KB; ` +
        `${phase.iterations} alternating iterations, ms)`,
      table(
        [
          'door      target',
          latency ? 'p50' : 'ttfb p50',
          'added p50',
          'added p99',
          'added / floor',
          'added / chat door',
          'errors',
        ],
        phase.rows.map((r) => {
          const direct = r.target === 'direct'
          const floor = find(r.door, 'floor')
          const chat = find('chat', r.target)
          return [
            `${r.door.padEnd(9)} ${r.target}`,
            ms(raw(r).p50),
            direct ? '-' : ms(add(r)!.p50),
            direct ? '-' : ms(add(r)!.p99),
            direct || r.target === 'floor' ? '-' : ratio(add(r)!.p50, add(floor)?.p50),
            direct || r.door === 'chat' ? '-' : ratio(add(r)!.p50, add(chat)?.p50),
            r.errors,
          ]
        }),
      ),
    )
    for (const [name, byDoor] of Object.entries(phase.lembas ?? {})) {
      const parts = phase.doors.map((door) => {
        const l = byDoor[door]
        if (!l) return `${door} n/a (not logged at this --log-level)`
        return `${door} ${l.newResultsPerRequest}${l.from === 'request' ? '' : ` (${l.from} lines)`}`
      })
      out.push(`  ${name}: new results/request: ${parts.join(', ')}`)
    }
  }
  return out
}

/** The issue's target for each lembas and door: added p50 at 1 MB <= 1.2x the chat door's. */
export function doorsChecks(
  phases: readonly DoorsPhase[] | undefined,
  lembasNames: readonly string[],
  doors: readonly Door[],
): Check[] {
  const checks: Check[] = []
  const phase = phases?.find((p) => p.kind === 'doors' && p.size === '1mb')
  for (const name of lembasNames) {
    for (const door of doors) {
      if (door === 'chat') continue
      const target = `${name}: ${door} door added p50, 1 MB <= ${DOOR_RATIO_TARGET}x chat door's`
      const mine = phase?.rows.find((r) => r.door === door && r.target === name)
      const chat = phase?.rows.find((r) => r.door === 'chat' && r.target === name)
      if (!mine || !chat) {
        checks.push({
          target,
          measured: 'not measured (needs --phases doors, --sizes 1mb, --doors chat and this door)',
          pass: undefined,
        })
        continue
      }
      const value = ratioOf(mine.added.p50, chat.added.p50)
      checks.push({
        target,
        measured: `${ms(mine.added.p50)} ms vs chat ${ms(chat.added.p50)} ms = ${ratio(mine.added.p50, chat.added.p50)}`,
        pass: value === undefined ? undefined : value <= DOOR_RATIO_TARGET,
      })
    }
  }
  return checks
}

/** Each door's added p50 at every size, against the floor's on the same door, in one run. */
export function doorsFloorChecks(
  phases: readonly DoorsPhase[] | undefined,
  lembasNames: readonly string[],
  limit: number,
): Check[] {
  const checks: Check[] = []
  for (const phase of phases ?? []) {
    if (phase.kind !== 'doors') continue
    const doors = [...new Set(phase.rows.map((r) => r.door))]
    for (const name of lembasNames) {
      for (const door of doors) {
        const mine = phase.rows.find((r) => r.door === door && r.target === name)
        const floor = phase.rows.find((r) => r.door === door && r.target === 'floor')
        if (!mine || !floor) continue
        const value = ratioOf(mine.added.p50, floor.added.p50)
        checks.push({
          target: `${name}: ${door} door added p50, ${phase.size} <= ${limit}x floor's`,
          measured: `${ms(mine.added.p50)} ms vs floor ${ms(floor.added.p50)} ms = ${ratio(mine.added.p50, floor.added.p50)}`,
          pass: value === undefined ? undefined : value <= limit,
        })
      }
    }
  }
  return checks
}
