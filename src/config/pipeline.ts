import { recallSetup } from '../pipeline/recall.js'
import { SpliceCache } from '../pipeline/splice.js'
import { defaultProfile } from '../tools/index.js'
import { loadPromptBlock } from './loop.js'
import type { Loop } from './loop-schema.js'
import { sessionSources } from './sessions.js'

/** Characters of upstream history kept in memory for the fast path, over all sessions. */
const SPLICE_CHARS = 64 * 1024 * 1024

/** What the pipeline takes from loop.json and the flags: one place, for the CLI and the tests. */
export function pipelineSettings(loop: Loop, options: { sessionHeader: string }) {
  return {
    rules: loop.context,
    profile: defaultProfile,
    promptBlock: loadPromptBlock(),
    recall: recallSetup(loop.proxy.recall),
    sessionSources: sessionSources(loop, options.sessionHeader),
    continueWithinMs: loop.proxy.sessions.continue_within_ms,
    splice: new SpliceCache(SPLICE_CHARS),
    maxDepth: 512,
  }
}
