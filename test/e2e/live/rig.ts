/**
 * The proxy side of a live agent run: the proxy on a store beside the project (a SQLite file
 * unless told otherwise), the project as its workspace, and a tap in front of it. `close` takes
 * it all down, the fake upstream and the project too.
 */
import { rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createStore } from '../../../src/store/index.js'
import { createWorkspace } from '../../../src/workspace/index.js'
import { startProxy } from '../../helpers/proxy.js'
import type { LiveProject } from './agents.js'
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
