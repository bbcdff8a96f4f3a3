/**
 * The proxy side of a live agent run: the proxy on a store beside the project (a SQLite file
 * unless told otherwise), the project as its workspace, and a tap in front of it. `close` takes
 * it all down, the fake upstream and the project too.
 */
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createStore } from '../../../src/store/index.js'
import { createWorkspace } from '../../../src/workspace/index.js'
import { createLogger } from '../../../src/log.js'
import { createStats } from '../../../src/stats/index.js'
import { startFakeUpstream, type RecordedRequest } from '../../helpers/fake-upstream.js'
import { fullPathRequests, startProxy } from '../../helpers/proxy.js'
import type { LiveProject } from './agents.js'
import { stepByStep, type Call } from './model.js'
import { startTap, type TappedExchange } from './tap.js'

const DAY = 86_400_000

type ProxyOptions = Omit<Parameters<typeof startProxy>[0], 'upstreamUrl' | 'store'>

export async function liveProxy(
  project: LiveProject,
  fake: { readonly url: string; close(): Promise<void> },
  options: ProxyOptions = {},
  setup: {
    /** The store's URL, given the project's folder (default: a SQLite file there). */
    readonly store?: (dir: string) => string
    readonly onAnswer?: (exchange: TappedExchange) => void
  } = {},
) {
  const dir = dirname(project.root)
  const store = await createStore(setup.store?.(dir) ?? `sqlite:${join(dir, 'store.db')}`, {
    idleTtlMs: DAY,
  })
  const proxy = await startProxy({
    upstreamUrl: fake.url,
    store,
    workspace: await createWorkspace([project.root]),
    ...options,
  })
  const tap = await startTap(proxy.url, setup.onAnswer)
  return {
    proxy,
    tap,
    async close() {
      await tap.close()
      await proxy.close()
      await store.close()
      await fake.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A tap's watcher that stops the run at the proxy's first answer other than a 200. */
export function stopOnFailure(stop: AbortController) {
  return (exchange: TappedExchange) => {
    if (exchange.status !== 200)
      stop.abort(`the proxy answered ${exchange.status}: ${exchange.response.slice(0, 500)}`)
  }
}

/**
 * A live run against a step-by-step scripted model (`stepByStep`): the fake upstream playing
 * `steps` then `final`, the rig in front of it with its stats and log lines, stopped at the
 * proxy's first failed answer. What the tests of one agent CLI share; the CLI's set-up and the
 * checks of its results are theirs.
 */
export async function scriptedRun(
  project: LiveProject,
  steps: readonly Call[],
  final: string,
  isMain: (json: any) => boolean,
) {
  const main: RecordedRequest[] = []
  const fake = await startFakeUpstream(stepByStep(steps, final, isMain, main))
  const stop = new AbortController()
  const stats = createStats()
  const logLines: string[] = []
  const rig = await liveProxy(
    project,
    fake,
    { stats, log: createLogger('info', (line) => void logLines.push(line)) },
    { onAnswer: stopOnFailure(stop) },
  )
  return {
    rig,
    stop,
    /** The tool results of the model's last scripted request, as the upstream got them. */
    lastResults(): string[] {
      const messages = main.at(-1)!.json.messages as any[]
      return messages.filter((m) => m.role === 'tool').map((m) => String(m.content))
    },
    /**
     * What every run must show at its end: the agent never saw a recall call, every request with
     * new results went on from the one before (the fast path), every result as `agent`'s
     * profile expects.
     */
    assertClean(agent: string): void {
      for (const exchange of rig.tap.exchanges)
        assert.ok(!exchange.response.includes('"recall"'), 'a recall call reached the agent')
      const full = fullPathRequests(logLines)
      assert.deepEqual(full.full, [], `${full.requests} requests with new results`)
      assert.equal(
        stats.snapshot().totals.unrecognised,
        0,
        `every ${agent} result as its profile expects`,
      )
    },
  }
}
