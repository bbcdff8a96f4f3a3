import type { Store } from '../store/store.js'
import { keys, parseRecord } from './records.js'

/**
 * Cache-aware elision (beyond spec 3.0.0, opt-in): old tool results replaced in batches by a
 * one-line stand-in. A batch is stored with the session, so every later request of any process
 * carries the same bytes; it applies to requests at least as long as the one that decided it.
 */
export interface ElisionBatch {
  /** Client items of the request that decided it: shorter ones (a rewind) go without it. */
  readonly at: number
  /** Tool message key -> the stand-in's text. */
  readonly texts: Readonly<Record<string, string>>
  /** `--elide-inputs`: tool message key -> its call's arguments as sent from then on. */
  readonly inputs?: Readonly<Record<string, string>> | undefined
}

/** The batches a request goes with. */
export interface Elision {
  /** Batch records read (the next one is number batches + 1). */
  readonly batches: number
  /** The stand-ins of every batch that applies. */
  readonly texts: ReadonlyMap<string, string>
  /** The elided calls' arguments, by their results' keys, of every batch that applies. */
  readonly inputs: ReadonlyMap<string, string>
  /** Where batches that do not apply yet begin to (after a rewind). */
  readonly pending: readonly number[]
}

export const NO_ELISION: Elision = { batches: 0, texts: new Map(), inputs: new Map(), pending: [] }

/** Every batch of a session, applied as far as the request's length allows. */
export async function readElision(scope: string, store: Store, items: number): Promise<Elision> {
  let elision = NO_ELISION
  for (;;) {
    // Batches are numbered from 1 without gaps: read a run of numbers at a time (a long session
    // has made hundreds), up to the first that is not there.
    const numbers = Array.from({ length: BATCHES_A_READ }, (_, i) => elision.batches + 1 + i)
    const values = await store.get(scope, numbers.map(keys.elision))
    for (const value of values) {
      const batch = parseRecord<ElisionBatch>(value)
      if (!batch) return elision
      elision = withBatch(elision, batch, items)
    }
  }
}

/** Batch numbers asked for in one store read. */
const BATCHES_A_READ = 64

export function withBatch(elision: Elision, batch: ElisionBatch, items: number): Elision {
  const applies = batch.at <= items
  if (!applies)
    return { ...elision, batches: elision.batches + 1, pending: [...elision.pending, batch.at] }
  return {
    batches: elision.batches + 1,
    texts: new Map([...elision.texts, ...Object.entries(batch.texts)]),
    inputs: batch.inputs
      ? new Map([...elision.inputs, ...Object.entries(batch.inputs)])
      : elision.inputs,
    pending: elision.pending,
  }
}

/**
 * Stores batch number `elision.batches + 1`; first writer wins, and the winner is returned.
 * `recalled` (result number -> text) is what recall shows before an elided call's result: the
 * call as the model wrote it, the same text whichever process writes it first.
 */
export async function writeBatch(
  scope: string,
  store: Store,
  elision: Elision,
  batch: ElisionBatch,
  recalled: ReadonlyMap<number, string> = new Map(),
): Promise<ElisionBatch> {
  const [winner] = await store.putIfAbsent(scope, [
    [keys.elision(elision.batches + 1), JSON.stringify(batch)],
    ...[...recalled].map(([n, text]) => [keys.input(n), text] as const),
  ])
  return JSON.parse(winner!) as ElisionBatch
}
