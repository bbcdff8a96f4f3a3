import { createHash } from 'node:crypto'
import { DedupeTable, type DedupeSnapshot } from '../context/index.js'
import type { Logger } from '../log.js'
import { pacer } from '../pace/index.js'
import type { Store } from '../store/store.js'
import type { ToolCall } from '../wire/chat.js'
import type { Live } from './elide.js'
import type { Kept } from './kept.js'
import type { SpliceCache, SpliceState } from './splice.js'

/**
 * What the fast path remembers, handed from a stopping process to the next one on the same
 * store and address: after a restart (an upgrade, a new image), a session's next request goes
 * on from its last one instead of parsing its whole history again, and many sessions coming
 * back at once do not all hold a whole parse in memory. The states are written on a graceful
 * stop only (a killed process leaves none: its sessions take the full path, as before), read
 * once at start, and then dropped from the store. A state stays a hint: a request uses it only
 * when its bytes start with the state's, checked by digest, and a state from another version of
 * the proxy or other settings is not used at all.
 */

/** The store scope of handed-on states; no session scope takes the name (those are hashes). */
const SCOPE = 'lembas-resume'

/** Serialised states a part holds, about: a part is one store value. */
const PART_CHARS = 4 * 1024 * 1024

interface Saved {
  /** The proxy's version and the settings that shape what goes upstream. */
  readonly fingerprint: string
  readonly keys: readonly (readonly [string, readonly SavedState[]])[]
}

/**
 * A SpliceState as JSON: buffers in base64, maps as entry lists, the table as its snapshot.
 * Without the fields around the history (`rest`): some clients put a key there (`api_key`), and
 * keys are never written down; the next request parses those fields again, once.
 */
export interface SavedState {
  readonly scope: string
  readonly explicit: boolean
  readonly named?: string | undefined
  readonly systemKey: string
  readonly fixed: Record<string, string>
  readonly summaryAhead: boolean
  readonly arrayStart: number
  readonly prefix: { readonly length: number; readonly digest: string; readonly opens: boolean }
  readonly kept: {
    readonly pieces: readonly (string | readonly [number, number])[]
    readonly bytes: number
    readonly weight: number
  }
  readonly digests: { readonly client: readonly string[]; readonly upstream: readonly string[] }
  readonly sentBytes: number
  readonly itemCount: number
  readonly lastDigest: string
  readonly history: {
    readonly table: DedupeSnapshot
    readonly views: readonly (readonly [string, { readonly sha256: string }])[]
    readonly lastToolKey: string | undefined
    readonly calls: readonly (readonly [string, ToolCall])[]
    readonly seen: readonly (readonly [string, number])[]
    readonly elision: {
      readonly batches: number
      readonly texts: readonly (readonly [string, string])[]
      readonly inputs: readonly (readonly [string, string])[]
      readonly pending: readonly number[]
    }
    readonly carried: number
    readonly turns: number
    readonly inTurn: boolean
  }
  readonly live: readonly Live[]
}

/** Where states are handed on: the store, the process's place in it, what a state must match. */
export interface Handover {
  readonly store: Store
  /** The machine, the address and the worker's place. */
  readonly name: string
  /** resumeFingerprint of this process. */
  readonly fingerprint: string
  readonly log: Logger
}

/**
 * The states' own format: what a process of the same version but another format wrote is not
 * taken on. 2: prefix digests are 64-bit xxHash (they were SHA-256). 3: a live result's stub
 * names a list of ids (a call that read several files may stub several). 4: elided calls'
 * arguments (`--elide-inputs`) with the elision, and where a live result's call stands. 5: recall answers put back are live
 * results, and `--elide` leaves the newest turn's messages out of a state. 6: on `/v1/responses` without
 * `instructions`, the prompt block goes with the first item (it went into `instructions`).
 */
const STATE_FORMAT = 6

/** A digest of what makes a remembered state valid: the same code and the same settings. */
export function resumeFingerprint(version: string, settings: unknown): string {
  return createHash('sha256')
    .update(version + '\u0000' + STATE_FORMAT + '\u0000' + JSON.stringify(settings))
    .digest('base64url')
}

export function saveState(state: SpliceState): SavedState {
  const { history, kept } = state
  return {
    scope: state.scope,
    explicit: state.explicit,
    ...(state.named !== undefined ? { named: state.named } : {}),
    systemKey: state.systemKey,
    fixed: state.fixed,
    summaryAhead: state.summaryAhead,
    arrayStart: state.arrayStart,
    prefix: { ...state.prefix, digest: state.prefix.digest.toString('base64') },
    kept: {
      pieces: kept.pieces.map((piece) =>
        Buffer.isBuffer(piece) ? piece.toString('base64') : ([piece.start, piece.end] as const),
      ),
      bytes: kept.bytes,
      weight: kept.weight,
    },
    digests: state.digests,
    sentBytes: state.sentBytes,
    itemCount: state.itemCount,
    lastDigest: state.lastDigest,
    history: {
      table: history.table.snapshot(),
      views: [...history.views],
      lastToolKey: history.lastToolKey,
      calls: [...history.calls],
      seen: [...history.seen],
      elision: {
        ...history.elision,
        texts: [...history.elision.texts],
        inputs: [...history.elision.inputs],
      },
      carried: history.carried,
      turns: history.turns,
      inTurn: history.inTurn,
    },
    live: state.live,
  }
}

export function loadState(saved: SavedState): SpliceState {
  const { history, kept } = saved
  return {
    ...saved,
    prefix: { ...saved.prefix, digest: Buffer.from(saved.prefix.digest, 'base64') },
    kept: {
      pieces: kept.pieces.map((piece): Kept =>
        typeof piece === 'string'
          ? Buffer.from(piece, 'base64')
          : { start: piece[0], end: piece[1] },
      ),
      bytes: kept.bytes,
      weight: kept.weight,
    },
    history: {
      ...history,
      table: DedupeTable.of(history.table),
      views: new Map(history.views),
      calls: new Map(history.calls),
      seen: new Map(history.seen),
      elision: {
        ...history.elision,
        texts: new Map(history.elision.texts),
        inputs: new Map(history.elision.inputs),
      },
    },
  }
}

/**
 * Writes every state the fast path holds, under the handover's name: in parts of a few MB, then
 * how many parts there are. Failing to is logged, never fatal.
 */
export async function handOnStates(
  splice: SpliceCache,
  { store, name, fingerprint, log }: Handover,
): Promise<void> {
  const pace = pacer()
  const parts: string[] = []
  let keys: [string, SavedState[]][] = []
  let chars = 0
  const close = () => {
    if (keys.length > 0) parts.push(JSON.stringify({ fingerprint, keys } satisfies Saved))
    keys = []
    chars = 0
  }
  let sessions = 0
  try {
    for (const [key, states] of splice.all()) {
      await pace()
      const saved = states.map(saveState)
      keys.push([key, saved])
      sessions += saved.length
      chars += states.reduce(
        (sum, state) => sum + state.kept.weight + state.history.table.weight,
        0,
      )
      if (chars >= PART_CHARS) close()
    }
    close()
    for (const [n, part] of parts.entries()) await store.setLatest(SCOPE, `${name}#${n + 1}`, part)
    await store.setLatest(SCOPE, name, String(parts.length))
    if (sessions > 0) log.info('sessions-handed-on', { sessions, parts: parts.length })
  } catch (error) {
    log.warn('sessions-not-handed-on', { message: (error as Error).message })
  }
}

/**
 * Takes on the states a process stopped under the handover's name left: into the fast path's
 * memory (within its budget), then drops them from the store. States of another version or other
 * settings are dropped unused.
 */
export async function takeOnStates(
  splice: SpliceCache,
  { store, name, fingerprint, log }: Handover,
): Promise<void> {
  try {
    const count = Number((await store.getLatest(SCOPE, name)) ?? 0)
    if (!(count > 0)) return
    let sessions = 0
    let stale = 0
    for (let n = 1; n <= count; n++) {
      const text = await store.getLatest(SCOPE, `${name}#${n}`)
      if (text === undefined) continue
      const saved = JSON.parse(text) as Saved
      await store.setLatest(SCOPE, `${name}#${n}`, '')
      const held = saved.keys.reduce((sum, [, states]) => sum + states.length, 0)
      if (saved.fingerprint !== fingerprint) {
        stale += held
        continue
      }
      for (const [key, states] of saved.keys) splice.adopt(key, states.map(loadState))
      sessions += held
    }
    await store.setLatest(SCOPE, name, '0')
    log.info('sessions-taken-on', { sessions, ...(stale > 0 ? { stale } : {}) })
  } catch (error) {
    log.warn('sessions-not-taken-on', { message: (error as Error).message })
  }
}
