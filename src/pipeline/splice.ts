import { createHash, type Hash } from 'node:crypto'
import type { HistoryState } from './history.js'

/**
 * What this process remembers of a session's last request, to handle the next one in time
 * proportional to what it appends: agents resend the whole history every turn, byte for byte,
 * plus a few new messages. A request that starts with the remembered bytes (checked by hash)
 * reuses the upstream text of those messages and the rebuild's state at their end; anything
 * else (a rewind, a rewritten history, a cold replica) takes the full path, with the same result.
 */
export interface SpliceState {
  readonly scope: string
  /** Index of the messages array's `[` in the request text. */
  readonly arrayStart: number
  /** Index just after the array's last element. */
  readonly lastEnd: number
  /** SHA-256 of the request text up to lastEnd. */
  readonly digest: string
  /** The upstream text of those messages (array elements joined by commas). */
  readonly messagesText: string
  readonly history: HistoryState
}

export interface SpliceHit {
  readonly state: SpliceState
  /** A hash that has read the request text up to state.lastEnd, to extend for the next state. */
  readonly hash: Hash
}

export class SpliceCache {
  readonly #byKey = new Map<string, SpliceState[]>()
  #chars = 0

  constructor(private readonly maxChars: number) {}

  /** The remembered state whose bytes this request starts with, followed by more messages or the end. */
  find(key: string, text: string): SpliceHit | undefined {
    for (const state of this.#byKey.get(key) ?? []) {
      if (text.length <= state.lastEnd) continue
      const next = text.charCodeAt(skip(text, state.lastEnd))
      if (next !== 44 /* , */ && next !== 93 /* ] */) continue
      const hash = createHash('sha256').update(text.slice(0, state.lastEnd))
      if (hash.copy().digest('hex') === state.digest) return { state, hash }
    }
    return undefined
  }

  remember(key: string, state: SpliceState): void {
    if (this.maxChars <= 0) return
    const kept = (this.#byKey.get(key) ?? []).filter((old) => old.scope !== state.scope)
    // A key holds a few sessions: implicit ones of one tenant share it.
    const states = [state, ...kept].slice(0, 4)
    for (const old of this.#byKey.get(key) ?? []) this.#chars -= old.messagesText.length
    for (const now of states) this.#chars += now.messagesText.length
    this.#byKey.delete(key) // re-insert: Map order is least recently used first
    this.#byKey.set(key, states)
    for (const [oldest, evicted] of this.#byKey) {
      if (this.#chars <= this.maxChars || oldest === key) break
      for (const old of evicted) this.#chars -= old.messagesText.length
      this.#byKey.delete(oldest)
    }
  }
}

function skip(text: string, from: number): number {
  let i = from
  while (i < text.length && /\s/.test(text[i]!)) i++
  return i
}

export function digestOf(text: string, end: number): { hash: Hash; digest: string } {
  const hash = createHash('sha256').update(text.slice(0, end))
  return { hash, digest: hash.copy().digest('hex') }
}
