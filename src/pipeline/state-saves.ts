import { createHash } from 'node:crypto'
import type { Logger } from '../log.js'
import type { Memo } from '../memo.js'
import { pacer } from '../pace/index.js'
import type { Store } from '../store/store.js'
import { loadState, saveState, type SavedState } from './resume.js'
import type { SpliceCache } from './splice.js'

/**
 * What the fast path remembers of each session, saved to the store now and then
 * (`--save-states-s`): a process that did not serve a session's last requests — the one started
 * after a crash, another replica, another worker — goes on from the last save instead of parsing
 * the whole history, and parses only what came after it. A graceful stop hands every state on
 * (resume.ts); a save is what is left when a process could not. Saved per key (door, tenant
 * digest, session header), each key in a scope of its own that expires with the store's idle
 * TTL, as the session's does. A saved state is a hint like a handed-on one: used only when the
 * request's bytes start with its prefix (checked by digest), and only by the same version and
 * settings.
 */

const KEY = 'states'

/** Serialised states one round writes at most; the other keys wait for the next round. */
const ROUND_CHARS = 16 * 1024 * 1024

interface Saved {
  /** resumeFingerprint of the process that saved them. */
  readonly fingerprint: string
  readonly states: readonly SavedState[]
}

/** The scope of a key's saved states: a digest (the key holds the tenant's). */
function scopeOf(key: string): string {
  return 'lembas-states/' + createHash('sha256').update(key).digest('base64url')
}

/** Takes on a key's saved states: what the fast path asks when it holds none. */
export interface StateRestore {
  restore(key: string): Promise<boolean>
}

export interface SavesOptions {
  readonly fingerprint: string
  /** How often a round saves what changed (`--save-states-s`). */
  readonly everyMs: number
  /**
   * Keys found with no save, and when: a request of such a key (a new session, a request without
   * tools) asks the store again only once a round may have saved it.
   */
  readonly unsaved: Memo<number>
  readonly log: Logger
  readonly now?: () => number
}

export class StateSaves implements StateRestore {
  readonly #changed: () => string[]
  /** Keys changed and not saved yet. */
  readonly #pending = new Set<string>()
  #timer: NodeJS.Timeout | undefined
  #round: Promise<void> | undefined

  constructor(
    private readonly splice: SpliceCache,
    private readonly store: Store,
    private readonly options: SavesOptions,
  ) {
    this.#changed = splice.trackChanges()
  }

  /** Saves in the background: each round, the keys changed since the last. */
  start(): void {
    this.#timer = setInterval(() => {
      this.#round ??= this.saveChanged().finally(() => (this.#round = undefined))
    }, this.options.everyMs)
    this.#timer.unref()
  }

  /** Stops saving, once a round under way has ended. */
  async stop(): Promise<void> {
    clearInterval(this.#timer)
    await this.#round
  }

  /**
   * Saves the states of every key remembered anew since the last round, up to ROUND_CHARS of
   * them (the rest in the next round). A store that fails is logged; its keys wait for the next.
   */
  async saveChanged(): Promise<void> {
    for (const key of this.#changed()) this.#pending.add(key)
    const pace = pacer()
    let chars = 0
    let sessions = 0
    for (const key of [...this.#pending]) {
      if (chars >= ROUND_CHARS) break
      this.#pending.delete(key)
      const states = this.splice.states(key)
      if (states.length === 0) continue // dropped from memory since
      await pace()
      const text = JSON.stringify({
        fingerprint: this.options.fingerprint,
        states: states.map(saveState),
      } satisfies Saved)
      try {
        await this.store.setLatest(scopeOf(key), KEY, text)
      } catch (error) {
        this.#pending.add(key)
        this.options.log.warn('states-not-saved', { message: (error as Error).message })
        return
      }
      chars += text.length
      sessions += states.length
    }
    if (sessions > 0) this.options.log.debug('states-saved', { sessions, chars })
  }

  /**
   * Takes on the saved states of `key` when this process holds none for it: whether it did. A
   * save of other settings, or a store that fails, is as none: the request takes the full path.
   */
  async restore(key: string): Promise<boolean> {
    if (this.splice.states(key).length > 0) return false
    const { fingerprint, everyMs, unsaved, log } = this.options
    const now = (this.options.now ?? Date.now)()
    const missed = unsaved.get(key)
    if (missed !== undefined && now - missed < everyMs) return false
    try {
      const text = await this.store.getLatest(scopeOf(key), KEY)
      const saved = text ? (JSON.parse(text) as Saved) : undefined
      if (saved?.fingerprint !== fingerprint) {
        unsaved.set(key, now)
        return false
      }
      unsaved.delete(key)
      if (this.splice.states(key).length > 0) return false
      this.splice.adopt(key, saved.states.map(loadState))
      log.info('states-restored', { sessions: saved.states.length })
      return true
    } catch (error) {
      log.warn('states-not-restored', { message: (error as Error).message })
      return false
    }
  }
}
