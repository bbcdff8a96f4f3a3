import type { ColdCollector } from '../http/cold-collect.js'
import type { Door } from './door.js'
import { spliceKey, type PrepareDeps } from './prepare.js'
import type { PrefixWatch } from './splice.js'

/**
 * Bytes of request bodies let in at once, first come first served; one body always fits. A
 * request that waits has not been read yet: its bytes stay with the client (TCP holds them).
 */
export class ByteBudget {
  #used = 0
  readonly #waiting: { readonly bytes: number; readonly go: () => void }[] = []

  constructor(readonly limit: number) {}

  /** Bytes let in now. */
  get used(): number {
    return this.#used
  }

  /** Requests waiting for room. */
  get waiting(): number {
    return this.#waiting.length
  }

  /** Waits for room for `bytes`; the function returned gives it back (once, however often called). */
  async acquire(bytes: number): Promise<() => void> {
    if (this.#waiting.length === 0 && this.#fits(bytes)) this.#used += bytes
    else await new Promise<void>((go) => this.#waiting.push({ bytes, go }))
    let given = false
    return () => {
      if (given) return
      given = true
      this.#used -= bytes
      this.#drain()
    }
  }

  #fits(bytes: number): boolean {
    return this.#used === 0 || this.#used + bytes <= this.limit
  }

  #drain(): void {
    while (this.#waiting.length > 0 && this.#fits(this.#waiting[0]!.bytes)) {
      const next = this.#waiting.shift()!
      this.#used += next.bytes
      next.go()
    }
  }
}

/** A body that does not say its length is counted as this many bytes. */
const UNKNOWN_BYTES = 1 << 20

/**
 * Bodies up to this size never wait: their parse takes little memory, and a new session's
 * first small request (or an agent's title request) must not queue behind a huge one.
 */
const SMALL_BYTES = 64 * 1024

/** How a body is let in: what to do with its bytes as they arrive, and once it is parsed. */
export interface Admitted {
  /** Digests the prefixes this process remembers for the request's key, as the bytes arrive. */
  readonly prefixes?: PrefixWatch | undefined
  /** Lets the next cold body in (call once the body is parsed; more calls do nothing). */
  readonly parsed: () => void
  /** Call once the answer has gone: a large body parsed whole has its garbage collected then. */
  readonly ended?: (() => void) | undefined
}

const NOTHING = () => {}

/** A body not (yet) let in: nothing held, nothing to do after it. */
export const NOT_ADMITTED: Admitted = { parsed: NOTHING }

/**
 * Before a body is read. A request that may go on from a remembered session state gets its
 * prefixes digested while it arrives. One that cannot (a new session, a restart, another
 * replica) will be parsed whole, which takes several times its size in memory: such bodies are
 * let in within `--cold-bodies-mb`, so many sessions starting together wait their turn instead
 * of all holding their bodies and parse trees at once. A compressed body is let in once decoded,
 * by its decoded size (`decoded`): its length on the wire says little of what it holds.
 */
export async function admitBody(
  door: Door,
  headers: Headers,
  deps: Pick<PrepareDeps, 'splice' | 'sessionSources' | 'memos'> & {
    readonly coldBodies?: ByteBudget
    readonly coldCollector?: ColdCollector | undefined
  },
  decoded?: number,
): Promise<Admitted> {
  const key = spliceKey(door, headers, deps.sessionSources, deps.memos.tenants)
  const prefixes = deps.splice.watch(key)
  if (prefixes) return { prefixes, parsed: NOTHING }
  const declared = decoded ?? Number(headers.get('content-length'))
  const bytes = Number.isFinite(declared) && declared > 0 ? declared : UNKNOWN_BYTES
  const collector = deps.coldCollector
  const ended = collector && bytes >= collector.minBytes ? () => collector.ended(bytes) : undefined
  const budget = deps.coldBodies
  if (!budget || bytes <= SMALL_BYTES) return { parsed: NOTHING, ended }
  return { parsed: await budget.acquire(bytes), ended }
}
