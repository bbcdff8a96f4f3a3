import type { ElideSettings } from '../pipeline/elide.js'
import { COLD_COLLECT_BYTES, coldCollector } from '../http/cold-collect.js'
import type { Collect } from '../http/idle-collect.js'
import type { Logger } from '../log.js'
import { ByteBudget } from '../pipeline/admission.js'
import { recallSetup } from '../pipeline/recall.js'
import { SpliceCache } from '../pipeline/splice.js'
import { defaultProfile } from '../tools/index.js'
import { MEMO_ENTRIES, Memos } from '../memo.js'
import { loadLoop, loadPromptBlock } from './loop.js'
import type { Loop } from './loop-schema.js'
import { sessionSources } from './sessions.js'

/** Bytes of upstream history kept in memory for the fast path, over all sessions (default). */
export const SPLICE_BYTES = 64 * 1024 * 1024
/**
 * Bodies parsed whole (new sessions, a restart) let in at once, over all requests (default): one
 * body of a megabyte or more at a time. On one core they take turns anyway; each one in at once
 * holds its parse and garbage meanwhile.
 */
export const COLD_BODIES_BYTES = 1024 * 1024

/** The elision settings, from the flags and loop.json; undefined (nothing elided) without --elide. */
export function elideSettings(
  config: {
    elide: boolean
    elideInputs?: boolean | undefined
    elideThreshold: number
    elideKeep: number
    elideHorizon: number
    cachedDiscount: number
    cacheWritePremium: number
  },
  loop: Loop = loadLoop(),
): ElideSettings | undefined {
  if (!config.elide) return undefined
  return {
    thresholdTokens: config.elideThreshold,
    keepResults: config.elideKeep,
    horizon: config.elideHorizon,
    cachedDiscount: config.cachedDiscount,
    writePremium: config.cacheWritePremium,
    standIn: loop.proxy.elide.stand_in,
    ...(config.elideInputs
      ? {
          inputs: {
            standIn: loop.proxy.elide.input_stand_in,
            minChars: loop.proxy.elide.input_min_chars,
            recalled: loop.proxy.elide.recalled_input,
          },
        }
      : {}),
  }
}

/** What the pipeline takes from loop.json and the flags: one place, for the CLI and the tests. */
export function pipelineSettings(
  loop: Loop,
  options: {
    sessionHeader: string
    elide?: ElideSettings | undefined
    /** `--splice-cache-mb`, in bytes. */
    spliceBytes?: number
    /** `--cold-bodies-mb`, in bytes. */
    coldBodiesBytes?: number
    /** `--observe`: forward every request as it came, shape it in shadow only. */
    observe?: boolean
    /** `--memo-entries`: entries in each small memo of the process. */
    memoEntries?: number
    /** `--cold-collect-kb`, in bytes (0: never). */
    coldCollectBytes?: number
    /** The collection run after a large cold request (tests count them); V8's by default. */
    collect?: Collect
    log?: Logger
  },
) {
  return {
    elide: options.elide,
    rules: loop.context,
    profile: defaultProfile,
    promptBlock: loadPromptBlock(),
    recall: recallSetup(loop.proxy.recall),
    // Shadow sessions never meet real ones: turning --observe off starts each session afresh.
    sessionSources: sessionSources(loop, options.sessionHeader, options.observe ? 'o.' : undefined),
    observe: options.observe ?? false,
    continueWithinMs: loop.proxy.sessions.continue_within_ms,
    splice: new SpliceCache(options.spliceBytes ?? SPLICE_BYTES),
    coldBodies: new ByteBudget(options.coldBodiesBytes ?? COLD_BODIES_BYTES),
    coldCollector: coldCollector(
      options.coldCollectBytes ?? COLD_COLLECT_BYTES,
      options.log,
      options.collect,
    ),
    memos: new Memos(options.memoEntries ?? MEMO_ENTRIES),
    maxDepth: 512,
  }
}
