import { serve } from '@hono/node-server'
import type { AddressInfo } from 'node:net'
import { loadLoop, loadPromptBlock } from '../../src/config/loop.js'
import { parseCommandLine } from '../../src/config/flags.js'
import { elideSettings, pipelineSettings } from '../../src/config/pipeline.js'
import { SpliceCache } from '../../src/pipeline/splice.js'
import type { StateRestore } from '../../src/pipeline/state-saves.js'
import { createApp } from '../../src/http/app.js'
import { refuseUpgrades } from '../../src/http/upgrade.js'
import type { ElideSettings } from '../../src/pipeline/elide.js'
import type { Recorder } from '../../src/pipeline/handle.js'
import { silentLogger, type Logger } from '../../src/log.js'
import type { StatsCollector } from '../../src/stats/index.js'
import { timedStore } from '../../src/stats/store.js'
import { createStore, type Store } from '../../src/store/index.js'
import { after, before } from 'node:test'
import { startFakeUpstream, type FakeUpstream } from './fake-upstream.js'
import { createUpstream } from '../../src/upstream/index.js'
import type { Workspace } from '../../src/workspace/index.js'

export const loop = loadLoop()
export const promptBlock = loadPromptBlock()

/** `--elide` with no other flag: the settings of the proxy's own defaults. */
export function defaultElide(...more: string[]): ElideSettings {
  const parsed = parseCommandLine(['--elide', ...more], {})
  if (parsed.kind !== 'run') throw new Error('--elide did not parse')
  return elideSettings(parsed.config)!
}

export interface TestProxy {
  readonly url: string
  close(): Promise<void>
}

/**
 * A fake upstream and a proxy on a memory store in front of it, started before the suite's
 * tests and closed after them: `fixture.upstream`, `fixture.proxy` once they run.
 */
export function proxyOnFake(): { upstream: FakeUpstream; proxy: TestProxy } {
  const fixture = {} as { upstream: FakeUpstream; proxy: TestProxy }
  before(async () => {
    fixture.upstream = await startFakeUpstream()
    fixture.proxy = await startProxy({
      upstreamUrl: fixture.upstream.url,
      store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    })
  })
  after(async () => {
    await fixture.proxy.close()
    await fixture.upstream.close()
  })
  return fixture
}

/** A real lembas-proxy on a loopback port, in this process, in front of `upstreamUrl`. */
export async function startProxy(options: {
  upstreamUrl: string
  store: Store
  workspace?: Workspace
  sessionHeader?: string
  maxBodyBytes?: number
  timeoutMs?: number
  log?: Logger
  /** Characters the fast path may keep; 0 turns it off. */
  spliceChars?: number
  /** The fast path's memory itself, to look into (instead of spliceChars). */
  splice?: SpliceCache
  /** `--save-states-s`: where a session this process holds no state of is restored from. */
  saves?: StateRestore
  /** Serves GET /stats and GET /metrics, and times the store. */
  stats?: StatsCollector
  authSecret?: string
  /** Sees each shaped request (`--record`). */
  recorder?: Recorder
  /** `--elide` and its settings. */
  elide?: ElideSettings
  /** `--observe`: forward as sent, shape in shadow. */
  observe?: boolean
  /** `--cold-bodies-mb`, in bytes. */
  coldBodiesBytes?: number
  /** `--cold-collect-kb`, in bytes, and the collection it runs (V8's unless given). */
  coldCollectBytes?: number
  collect?: () => void
}): Promise<TestProxy> {
  const upstream = createUpstream({
    baseUrl: options.upstreamUrl,
    timeoutMs: options.timeoutMs ?? 30_000,
  })
  const app = createApp({
    ...pipelineSettings(loop, {
      sessionHeader: options.sessionHeader ?? 'x-session-id',
      elide: options.elide,
      observe: options.observe ?? false,
      coldBodiesBytes: options.coldBodiesBytes,
      coldCollectBytes: options.coldCollectBytes,
      ...(options.collect ? { collect: options.collect } : {}),
    }),
    ...(options.spliceChars === undefined ? {} : { splice: new SpliceCache(options.spliceChars) }),
    ...(options.splice ? { splice: options.splice } : {}),
    ...(options.saves ? { saves: options.saves } : {}),
    store: options.stats ? timedStore(options.store, options.stats) : options.store,
    stats: options.stats,
    recorder: options.recorder,
    upstream,
    workspace: options.workspace,
    log: options.log ?? silentLogger,
    options: {
      compactionHeader: 'x-lembas-compaction',
      maxBodyBytes: options.maxBodyBytes ?? 64 * 1024 * 1024,
      authSecret: options.authSecret,
    },
  })

  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s))
  })
  refuseUpgrades(server)
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await upstream.close()
    },
  }
}

/** POSTs a chat request to the proxy and returns status, headers and body text. */
export function postChat(
  proxyUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  return postTo(proxyUrl + '/v1/chat/completions', body, headers)
}

/** POSTs a JSON body to a URL of the proxy and returns status, headers and body text. */
export async function postTo(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer test-key', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, text, json }
}

/** The data payloads of an SSE body, [DONE] included. */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
}

/** A chat request whose one assistant turn called Bash once per result, with the results after. */
export function chatWithResults(results: readonly { id: string; output: string }[]) {
  return {
    model: 'm',
    tools: [{ type: 'function', function: { name: 'Bash' } }],
    messages: [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: results.map(({ id }) => ({
          id,
          type: 'function',
          function: { name: 'Bash', arguments: '{}' },
        })),
      },
      ...results.map(({ id, output }) => ({ role: 'tool', tool_call_id: id, content: output })),
    ],
  }
}

/** The proxy's `request` log lines (one a request, at its end), parsed. */
export function requestLines(logLines: readonly string[]): any[] {
  return logLines.map((line) => JSON.parse(line)).filter((l) => l.event === 'request')
}

/**
 * From the proxy's log lines: the requests after the first that carried a new result which did
 * not go on from the previous request (the full path: their whole history parsed again). A real
 * agent appends to its history, so there should be none.
 */
export function fullPathRequests(logLines: readonly string[]): {
  requests: number
  full: object[]
} {
  const logged = requestLines(logLines).filter((l) => (l.newResults ?? 0) > 0)
  return { requests: logged.length, full: logged.slice(1).filter((l) => l.spliced !== 1) }
}
