import { createHash, hash } from 'node:crypto'
import { updateText } from './digest.js'
import type { ReadCall } from './types.js'

/** A full read the request carries: what a later stub may point at. */
export interface ReadEntry {
  readonly kind: 'read'
  readonly id: string
  readonly absPath: string
  readonly start: number
  readonly end: number
  /** Workspace mode: the file's full hash. */
  readonly sha256?: string
  /**
   * Blind mode: a hash of each line shown, to compare lines without keeping them: LINE_HASH
   * characters a line, one after another (one string, not one per line: 5x less memory).
   * Records stored before kept an array of longer hashes: see `legacyLineHashes`.
   */
  readonly lineHashes?: string
}

/** A full listing or search result the request carries. */
export interface ListingEntry {
  readonly kind: 'listing'
  readonly id: string
  /** Tool name and arguments as sorted-key JSON. */
  readonly key: string
  readonly textSha256: string
}

/** A change to files (an edit, a write, a patch): earlier reads of them are no stub targets. */
export interface TouchEntry {
  readonly kind: 'touch'
  readonly id: string
  readonly absPaths: readonly string[]
}

/** The full reads of a call that read several files, under its one id. */
export interface ReadsEntry {
  readonly kind: 'reads'
  readonly id: string
  readonly reads: readonly ReadEntry[]
}

export type Entry = ReadEntry | ReadsEntry | ListingEntry | TouchEntry

/** A table's entries (touches left out: applied already) and every id it has seen. */
export interface DedupeSnapshot {
  readonly entries: readonly (ReadEntry | ListingEntry)[]
  readonly ids: readonly string[]
}

/** An entry's fixed cost in memory, about: an object, its strings, a set slot. */
const ENTRY_BYTES = 160

/** An entry's weight in the table: its fixed cost and its blind line hashes. */
function entryWeight(entry: ReadEntry | ListingEntry): number {
  return ENTRY_BYTES + (entry.kind === 'read' ? (entry.lineHashes?.length ?? 0) : 0)
}

/**
 * The dedupe table (spec §2, §6): the full results present earlier in the request being built.
 * Built afresh for every request, so a rewind, a reply or a compaction empties it by itself.
 */
export class DedupeTable {
  readonly #entries: (ReadEntry | ListingEntry)[] = []
  readonly #ids = new Set<string>()
  /** Kept as entries come and go: asked on every request, it must not walk the table. */
  #weight = 0

  add(entry: Entry): void {
    if (entry.kind === 'reads') {
      for (const read of entry.reads) this.add(read)
      return
    }
    if (!this.#ids.has(entry.id)) this.#weight += ENTRY_BYTES
    this.#ids.add(entry.id)
    if (entry.kind !== 'touch') {
      this.#entries.push(entry)
      this.#weight += entryWeight(entry)
      return
    }
    // Blind mode cannot hash the file: a read of it before this change must not be a target.
    const touched = new Set(entry.absPaths)
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const earlier = this.#entries[i]
      if (earlier?.kind === 'read' && touched.has(earlier.absPath)) {
        this.#entries.splice(i, 1)
        this.#weight -= entryWeight(earlier)
      }
    }
  }

  /** A copy to build on: requests that share a history each extend their own. */
  clone(): DedupeTable {
    const copy = new DedupeTable()
    for (const entry of this.#entries) copy.#entries.push(entry)
    for (const id of this.#ids) copy.#ids.add(id)
    copy.#weight = this.#weight
    return copy
  }

  has(id: string): boolean {
    return this.#ids.has(id)
  }

  /** What the table holds, as plain data: `DedupeTable.of` makes the same table again. */
  snapshot(): DedupeSnapshot {
    return { entries: [...this.#entries], ids: [...this.#ids] }
  }

  static of(snapshot: DedupeSnapshot): DedupeTable {
    const table = new DedupeTable()
    for (const id of snapshot.ids) {
      table.#ids.add(id)
      table.#weight += ENTRY_BYTES
    }
    for (const entry of snapshot.entries) {
      table.#entries.push(entry)
      table.#weight += entryWeight(entry)
    }
    return table
  }

  /** About how many bytes the table holds (blind line hashes most): for a cache's budget. */
  get weight(): number {
    return this.#weight
  }

  /** The newest full read of the same file, unchanged, whose lines hold the lines asked for. */
  findRead(read: ReadCall): ReadEntry | undefined {
    // Hashed only when an earlier read of the file could hold these lines.
    let lineHashes: string | undefined
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i]
      if (entry?.kind !== 'read' || entry.absPath !== read.absPath) continue
      if (read.start < entry.start || read.end > entry.end) continue
      if (read.file) {
        if (entry.sha256 === read.file.sha256) return entry
      } else if (entry.lineHashes && read.shown) {
        lineHashes ??= hashLines(read.shown)
        if (sameLines(entry, read.start, lineHashes)) return entry
      }
    }
    return undefined
  }

  findListing(key: string, textSha256: string): ListingEntry | undefined {
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i]
      if (entry?.kind === 'listing' && entry.key === key && entry.textSha256 === textSha256) {
        return entry
      }
    }
    return undefined
  }
}

function sameLines(entry: ReadEntry, start: number, lineHashes: string): boolean {
  const from = (start - entry.start) * LINE_HASH
  return entry.lineHashes?.startsWith(lineHashes, from) === true
}

/**
 * A blind read of more lines than this is remembered by no line hashes: no agent's read window is
 * near it (2,000 lines is the usual), so it is output to show, not a file to stub against, and
 * hashing and storing its lines would cost more than it could save.
 */
export const MAX_HASHED_LINES = 10_000

/**
 * Characters of a line's hash: 48 bits of its SHA-256 in base64url, ample to tell the lines
 * at one place of one file apart.
 */
const LINE_HASH = 8

/** The hashes of `lines`, LINE_HASH characters each, in one string. */
export function hashLines(lines: readonly string[]): string {
  return lines.map((line) => hash('sha256', line, 'base64url').slice(0, LINE_HASH)).join('')
}

/**
 * Line hashes as records written before kept them (an array of 16-character prefixes of the
 * same base64url digests) in today's form: their first LINE_HASH characters, joined.
 */
export function legacyLineHashes(entry: Entry): Entry {
  if (entry.kind === 'reads') return entry
  if (entry.kind !== 'read' || !Array.isArray(entry.lineHashes)) return entry
  const old = entry.lineHashes as readonly string[]
  return { ...entry, lineHashes: old.map((h) => h.slice(0, LINE_HASH)).join('') }
}

export function sha256Hex(text: string): string {
  return updateText(createHash('sha256'), text).digest('hex')
}

/** JSON with object keys sorted at every level: equal arguments compare equal as text. */
export function sortedKeyJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((key) => [key, sortKeys(record[key])]),
    )
  }
  return value
}
