/**
 * The upstream bytes of a session's known items, kept small: most of them repeat the client's
 * own bytes (an untouched message, a result with only its id bracket added), and the client
 * sends those bytes again with its next request. So the upstream bytes are kept as spans of the
 * client's request, which the next request resolves against its own body (it starts with the
 * same bytes, checked by digest), and the few bytes the proxy changed.
 */

/** Bytes [start, end) of the client's request: the upstream repeats them. */
export interface Span {
  readonly start: number
  readonly end: number
}

export type Kept = Buffer | Span

/** The upstream bytes, as views of `body` (a request that starts with the remembered bytes). */
export function resolveKept(kept: readonly Kept[], body: Buffer): Buffer[] {
  return kept.map((piece) =>
    Buffer.isBuffer(piece) ? piece : body.subarray(piece.start, piece.end),
  )
}

/** A session's known items upstream: the pieces, their upstream bytes, their memory. */
export interface KeptItems {
  readonly pieces: readonly Kept[]
  /** Upstream bytes the pieces stand for. */
  readonly bytes: number
  /** What the pieces hold in memory: their own bytes and a few words each. */
  readonly weight: number
}

export const NO_ITEMS: KeptItems = { pieces: [], bytes: 0, weight: 0 }

/** Memory of a span, and of an own piece besides its bytes: an object and an array slot. */
const SPAN_WEIGHT = 48
const OWN_WEIGHT = 64

const COMMA = Buffer.from(',')

/** Bytes that must match for the client's bytes to count as resuming inside a changed item. */
const PROBE = 32

/** Places an item may be changed in, beyond which its middle is kept as own bytes. */
const MIDDLE_ROUNDS = 8

/** Own bytes up to this size are joined with the ones before them (commas, brackets). */
const JOIN_BYTES = 4096

/**
 * Builds kept pieces for upstream items from the client items they came from: each item's
 * upstream bytes are its client bytes where they agree at the start and at the end, and own
 * bytes in between. Items are joined by commas, as the upstream array has them.
 */
export class KeptBuilder {
  readonly #pieces: Kept[]
  #bytes: number
  /** Kept as pieces come: a remembered state is weighed on every request. */
  #weight: number

  constructor(
    private readonly body: Buffer,
    start: KeptItems = NO_ITEMS,
  ) {
    this.#pieces = [...start.pieces]
    this.#bytes = start.bytes
    this.#weight = start.weight
  }

  result(): KeptItems {
    return { pieces: this.#pieces, bytes: this.#bytes, weight: this.#weight }
  }

  /** The upstream bytes of the client element at [start, end) (empty: it sends nothing). */
  item(upstream: Buffer, start: number, end: number): void {
    if (upstream.length === 0) return
    const comma = this.#bytes > 0 ? 1 : 0
    if (comma) this.#own(COMMA)
    const client = this.body.subarray(start, end)
    const head = commonHead(upstream, client)
    const tail = commonTail(upstream, client, Math.min(upstream.length, client.length) - head)
    if (head > 0) this.#span(start, start + head)
    this.#middle(upstream.subarray(head, upstream.length - tail), start + head, end - tail)
    if (tail > 0) this.#span(end - tail, end)
    this.#bytes += comma + upstream.length
  }

  /**
   * The upstream bytes between the shared start and end of an item: where the proxy changed it
   * in more than one place (an id bracket before a capped output's head, the cap's marker before
   * its tail), the client's bytes that resume in between are spans too. Greedy and bounded; any
   * split gives the same bytes, since every span is compared before it is kept.
   */
  #middle(upstream: Buffer, from: number, to: number): void {
    let rest = upstream
    let at = from
    for (
      let round = 0;
      round < MIDDLE_ROUNDS && rest.length >= PROBE && to - at >= PROBE;
      round++
    ) {
      // Where the client's next bytes resume in the upstream: what comes before is the proxy's.
      const resumes = rest.indexOf(this.body.subarray(at, at + PROBE))
      if (resumes < 0) break
      if (resumes > 0) this.#own(Buffer.from(rest.subarray(0, resumes)))
      rest = rest.subarray(resumes)
      const same = commonHead(rest, this.body.subarray(at, to))
      this.#span(at, at + same)
      rest = rest.subarray(same)
      at += same
      if (rest.length < PROBE) break
      // Where the upstream's next bytes resume in the client: what comes before was left out.
      const skipped = this.body.subarray(at, to).indexOf(rest.subarray(0, PROBE))
      if (skipped < 0) break
      at += skipped
    }
    // A copy: a view would keep the whole encoded text alive.
    if (rest.length > 0) this.#own(Buffer.from(rest))
  }

  #span(start: number, end: number): void {
    const last = this.#pieces.at(-1)
    if (last !== undefined && !Buffer.isBuffer(last) && last.end === start)
      this.#pieces[this.#pieces.length - 1] = { start: last.start, end }
    else {
      this.#pieces.push({ start, end })
      this.#weight += SPAN_WEIGHT
    }
  }

  #own(bytes: Buffer): void {
    const last = this.#pieces.at(-1)
    // The client's separator is often the very byte the upstream has there: the span goes on.
    if (
      last !== undefined &&
      !Buffer.isBuffer(last) &&
      this.body.subarray(last.end, last.end + bytes.length).equals(bytes)
    )
      this.#pieces[this.#pieces.length - 1] = { start: last.start, end: last.end + bytes.length }
    else if (Buffer.isBuffer(last) && last.length + bytes.length <= JOIN_BYTES) {
      this.#pieces[this.#pieces.length - 1] = Buffer.concat([last, bytes])
      this.#weight += bytes.length
    } else {
      this.#pieces.push(bytes)
      this.#weight += OWN_WEIGHT + bytes.length
    }
  }
}

/** How many bytes two buffers share at their start (compared natively, in growing steps). */
export function commonHead(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length)
  let low = 0
  let step = 64
  // Gallop: equal blocks of doubling size, then halve the first unequal one.
  while (low < n) {
    const high = Math.min(n, low + step)
    if (!a.subarray(low, high).equals(b.subarray(low, high)))
      return low + firstUnequal(a.subarray(low, high), b.subarray(low, high))
    low = high
    step *= 2
  }
  return n
}

/** How many bytes (at most `max`) two buffers share at their end. */
export function commonTail(a: Buffer, b: Buffer, max: number): number {
  let low = 0
  let step = 64
  while (low < max) {
    const high = Math.min(max, low + step)
    const x = a.subarray(a.length - high, a.length - low)
    const y = b.subarray(b.length - high, b.length - low)
    if (!x.equals(y)) return low + lastUnequal(x, y)
    low = high
    step *= 2
  }
  return max
}

/** The first differing byte of two unequal buffers of one length: halves compared natively. */
export function firstUnequal(x: Buffer, y: Buffer): number {
  let low = 0
  let high = x.length
  while (high - low > 64) {
    const middle = (low + high) >> 1
    if (x.subarray(low, middle).equals(y.subarray(low, middle))) low = middle
    else high = middle
  }
  while (low < high && x[low] === y[low]) low++
  return low
}

/** How many bytes two unequal buffers of one length share at their end. */
function lastUnequal(x: Buffer, y: Buffer): number {
  let same = 0
  while (same < x.length && x[x.length - 1 - same] === y[y.length - 1 - same]) same++
  return same
}
