#!/usr/bin/env node
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import { loadLoop, packageRoot } from './config/loop.js'
import { helpText, parseCommandLine, type Config } from './config/flags.js'
import { elideSettings, pipelineSettings } from './config/pipeline.js'
import { LembasError } from './errors.js'
import { createApp } from './http/app.js'
import { isLoopback } from './http/hosts.js'
import { guardConnections } from './http/guard.js'
import { stopper } from './http/stop.js'
import { refuseUpgrades } from './http/upgrade.js'
import { setHeapGrowth } from './http/heap-growth.js'
import { capYoungGeneration } from './http/young-generation.js'
import { collectWhenIdle } from './http/idle-collect.js'
import { createLogger, type Logger } from './log.js'
import type { Loop } from './config/loop-schema.js'
import { handOnStates, resumeFingerprint, takeOnStates } from './pipeline/resume.js'
import { StateSaves } from './pipeline/state-saves.js'
import type { Store } from './store/store.js'
import { createRecorder } from './record/recorder.js'
import { runPrimary } from './cluster/primary.js'
import { workerStats } from './cluster/worker-stats.js'
import { isPrimaryMessage } from './cluster/messages.js'
import { createStats, type StatsSink } from './stats/index.js'
import { keepStats } from './stats/persist.js'
import { timedStore } from './stats/store.js'
import { createStore, defaultSqlitePath } from './store/index.js'
import { createUpstream, routedUpstream } from './upstream/index.js'
import { createWorkspace } from './workspace/index.js'

/** The only place that reads the environment, listens, or exits. */
async function main(): Promise<void> {
  const version = (
    JSON.parse(readFileSync(packageRoot() + 'package.json', 'utf8')) as { version: string }
  ).version
  const argv = process.argv.slice(2)
  // A subcommand comes before any flag: `lembas-proxy replay FILE...`.
  // Loaded on demand: replay's tokenizer tables alone hold about 35 MB that a server never uses.
  if (argv[0] === 'replay') {
    const { runReplay } = await import('./replay/command.js')
    return void process.stdout.write(await runReplay(argv.slice(1)))
  }
  if (argv[0] === 'stats') {
    const { runStats } = await import('./stats/command.js')
    return void process.stdout.write(await runStats(argv.slice(1)))
  }
  const parsed = parseCommandLine(argv, process.env)
  if (parsed.kind === 'help') return void process.stdout.write(helpText(version))
  if (parsed.kind === 'version') return void process.stdout.write(version + '\n')
  await run(parsed.config, version)
}

/** The store the flags name: SQLite in the user's data folder unless told otherwise. */
function openStore(config: Config, stats?: StatsSink) {
  return createStore(config.store || 'sqlite:' + defaultSqlitePath(), {
    idleTtlMs: config.idleTtlMs,
    cacheBytes: config.storeCacheBytes,
    // A write that waited for another worker's lock, in lembas_store_duration_seconds.
    onLockWait: stats && ((ms, ok) => stats.recordStore('lock_wait', ms, ok)),
  })
}

/** The prices money is counted at (`--price-per-mtok`), when given. */
function pricesOf(config: Config) {
  if (config.pricePerMTok === undefined) return undefined
  return {
    perMTok: config.pricePerMTok,
    cachedDiscount: config.cachedDiscount,
    writePremium: config.cacheWritePremium,
  }
}

/**
 * A restart goes on from where the last process stopped: the fast path's states are handed on
 * through the store (not `memory:`, which dies with the process), under the machine's name, the
 * address and the worker's place, and only to a process of the same version and settings.
 */
function handingOn(
  config: Config,
  version: string,
  loop: Loop,
  settings: ReturnType<typeof pipelineSettings>,
  store: Store,
  log: Logger,
) {
  if (store.kind === 'memory' || config.spliceCacheBytes <= 0) return undefined
  const slot = process.env.LEMBAS_WORKER_SLOT ?? '0'
  const name = `${placeOf(config)}/${slot}`
  const fingerprint = resumeFingerprint(version, {
    loop,
    promptBlock: settings.promptBlock,
    elide: settings.elide,
    observe: config.observe,
    sessionHeader: config.sessionHeader,
    workspace: config.workspace,
  })
  const handover = { store, name, fingerprint, log }
  // Saved now and then too: what a crash leaves for the next process, or another replica.
  const saves =
    config.saveStatesMs > 0
      ? new StateSaves(settings.splice, store, {
          fingerprint,
          everyMs: config.saveStatesMs,
          unsaved: settings.memos.unsaved,
          log,
        })
      : undefined
  return {
    saves,
    take: () => takeOnStates(settings.splice, handover),
    hand: async () => {
      await saves?.stop()
      await handOnStates(settings.splice, handover)
    },
  }
}

/**
 * This process's place, for what it keeps in the store beyond a restart: replicas on one store
 * often bind the same address, and the machine's name (a container's hostname) tells them apart.
 */
function placeOf(config: Config): string {
  return `${hostname()}/${config.host}:${config.port}`
}

/**
 * Where the figures are kept over a restart, and the name they had before: an `--observe` run's
 * "would save" apart from real savings, so a switch either way does not add one to the other.
 */
function figuresOf(config: Config): [name: string, former: string | undefined] {
  if (config.observe) return [placeOf(config) + '/observe', undefined]
  return [placeOf(config), `${config.host}:${config.port}`]
}

/** One proxy for every agent of a team: the APIs given an upstream of their own. */
function ownRoutes(config: Config): { path: string; url: string }[] {
  return [
    { path: '/messages', url: config.upstreamMessages },
    { path: '/responses', url: config.upstreamResponses },
  ].filter((route) => route.url !== '')
}

/** The start-up lines: where it listens, each API's upstream, the mode. */
function startLines(config: Config, host: string, port: number): string {
  return (
    `lembas-proxy listening on http://${host}:${port} -> ${displayUrl(config.upstream)}\n` +
    ownRoutes(config)
      .map(({ path, url }) => `  /v1${path} -> ${displayUrl(url)}\n`)
      .join('') +
    (config.workers > 1 ? `  workers: ${config.workers} processes on one store\n` : '') +
    (config.observe
      ? '  observing: requests go upstream as sent; /stats shows what would be saved\n'
      : '')
  )
}

async function run(config: Config, version: string): Promise<void> {
  // Before anything is opened: the process may replace itself (its workers inherit the flag).
  capYoungGeneration(config.semiSpaceMb)
  const log = createLogger(config.logLevel)
  if (config.workers > 1 && cluster.isPrimary) return runWorkers(config, log)
  setHeapGrowth(config.heapGrowthPercent)
  const loop = loadLoop()
  const workspace = config.workspace.length > 0 ? await openWorkspace(config.workspace) : undefined
  const toUpstream = (baseUrl: string) =>
    createUpstream({
      baseUrl,
      timeoutMs: config.upstreamTimeoutMs,
      keepAliveMs: config.upstreamKeepaliveMs,
    })
  const routes = ownRoutes(config).map(({ path, url }) => ({ path, upstream: toUpstream(url) }))
  const upstream = routedUpstream(toUpstream(config.upstream), routes)
  const recorder = config.record ? openRecorder(config.record, log) : undefined
  // A worker's figures go to the primary, which keeps every worker's in one place.
  const inWorker = cluster.isWorker
  const shared = inWorker ? workerStats((message) => process.send!(message)) : undefined
  const own = shared
    ? undefined
    : createStats({
        observe: config.observe,
        prices: pricesOf(config),
        maxSessions: config.statsSessions,
      })
  const stats = shared ?? own!
  const store = await openStore(config, stats)
  const keeper =
    own && config.stats === 'store' && store.kind !== 'memory'
      ? await keepStats(own, store, ...figuresOf(config), log)
      : undefined
  const settings = pipelineSettings(loop, {
    sessionHeader: config.sessionHeader,
    elide: elideSettings(config, loop),
    spliceBytes: config.spliceCacheBytes,
    coldBodiesBytes: config.coldBodiesBytes,
    coldCollectBytes: config.coldCollectBytes,
    observe: config.observe,
    memoEntries: config.memoEntries,
    log,
  })
  const { splice, memos } = settings
  stats.watchCache('splice', () => ({ bytes: splice.bytes, entries: splice.entries }))
  stats.watchCache('store', () => store.memory?.() ?? { bytes: 0, entries: 0 })
  for (const [name, memo] of memos.named()) stats.watchCache(name, () => memo.size)
  const handOn = handingOn(config, version, loop, settings, store, log)
  await handOn?.take()
  handOn?.saves?.start()
  const cold = settings.coldBodies
  stats.watchColdBodies(() => ({ bytes: cold.used, waiting: cold.waiting }))
  const app = createApp({
    ...settings,
    saves: handOn?.saves,
    store: timedStore(store, stats),
    stats,
    upstream,
    workspace,
    log,
    recorder,
    options: {
      compactionHeader: config.compactionHeader,
      maxBodyBytes: config.maxBodyBytes,
      authSecret: config.auth || undefined,
      allowedHosts: hostsToCheck(config),
    },
  })

  const guard = { maxConnections: config.maxConnections, headerTimeoutMs: config.headerTimeoutMs }
  const listen = {
    fetch: app.fetch,
    hostname: config.host,
    port: config.port,
  }
  // Before it listens (the port in use, an address not on this machine): say so and stop.
  const cannotListen = (error: NodeJS.ErrnoException) => {
    const why =
      error.code === 'EADDRINUSE'
        ? 'another process listens there; choose another --port'
        : error.message
    process.stderr.write(`lembas-proxy: cannot listen on ${config.host}:${config.port}: ${why}\n`)
    process.exit(1)
  }
  const server = serve(listen, (info) => {
    ;(server as Server).off('error', cannotListen)
    const host = info.family === 'IPv6' ? `[${info.address}]` : info.address
    // With --workers, the primary says it once for all of them.
    if (inWorker) process.send!({ lembas: 'listening', host, port: info.port })
    else process.stdout.write(startLines(config, host, info.port))
  })
  ;(server as Server).once('error', cannotListen)
  guardConnections(server, guard, log)
  refuseUpgrades(server)
  if (config.idleCollectMs > 0)
    collectWhenIdle(server as Server, { idleMs: config.idleCollectMs }, log)
  // With a shared secret, only clients that know it can use the upstream through us.
  if (!isLoopback(config.host) && !config.auth) {
    log.warn('listening-beyond-loopback', {
      host: config.host,
      hint: 'anyone who reaches this address can use your upstream; set --auth to require a secret',
    })
  }
  // The store is closed only once the requests under way are done with it.
  const { stop, now } = stopper(server, upstream, {
    graceMs: config.stopGraceMs,
    log,
    after: async () => {
      await handOn?.hand()
      await keeper?.flush()
      shared?.close()
      await Promise.allSettled([upstream.close(), store.close(), recorder?.close()])
    },
  })
  // SIGHUP: the terminal it ran in was closed; a stop like any other (figures kept, states handed on).
  // A second Ctrl-C ends the requests under way at once; a worker, which gets each Ctrl-C from
  // the terminal and again from the primary, leaves that to the primary's `stop-now`.
  let signalled = false
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      if (inWorker && signalled) return
      signalled = true
      void stop(signal)
    })
  if (inWorker)
    process.on('message', (message) => {
      if (isPrimaryMessage(message) && message.lembas === 'stop-now') now('primary')
    })
}

/**
 * `--workers N`: this process starts N workers (each runs `run` as a worker) and keeps their
 * stats; they share the port and the store, so the store must be one they can all reach.
 */
async function runWorkers(config: Config, log: ReturnType<typeof createLogger>): Promise<void> {
  if (config.store.startsWith('memory:'))
    throw new LembasError(
      'config_invalid',
      '--workers: the memory: store is one per process; use sqlite (the default) or redis',
    )
  const stats = createStats({
    observe: config.observe,
    prices: pricesOf(config),
    maxSessions: config.statsSessions,
  })
  const store = config.stats === 'store' ? await openStore(config) : undefined
  const keeper = store && (await keepStats(stats, store, ...figuresOf(config), log))
  runPrimary({
    workers: config.workers,
    stats,
    log,
    banner: (host, port) => startLines(config, host, port),
    graceMs: config.stopGraceMs,
    closed: async () => {
      await keeper?.flush()
      await store?.close()
    },
  })
}

async function openWorkspace(roots: readonly string[]) {
  try {
    return await createWorkspace(roots)
  } catch (error) {
    throw new LembasError('config_invalid', `--workspace: ${(error as Error).message}`)
  }
}

function openRecorder(dir: string, log: ReturnType<typeof createLogger>) {
  try {
    const recorder = createRecorder(dir, { log })
    log.info('recording', { path: recorder.path })
    return recorder
  } catch (error) {
    throw new LembasError('config_invalid', `--record: ${(error as Error).message}`)
  }
}

/**
 * The names beyond this machine's own that requests may carry in `Host`, or undefined for any:
 * on loopback only a rebinding web page sends another; bound beyond it, clients use names the
 * proxy cannot know, unless `--allowed-hosts` lists them.
 */
function hostsToCheck(config: { host: string; allowedHosts: readonly string[] }) {
  if (config.allowedHosts.includes('*')) return undefined
  return isLoopback(config.host) || config.allowedHosts.length > 0 ? config.allowedHosts : undefined
}

/** The upstream URL without credentials (a query string may carry a key), for the start-up line. */
function displayUrl(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  parsed.search = ''
  return parsed.toString().replace(/\/$/, '')
}

main().catch((error: unknown) => {
  const message =
    error instanceof LembasError ? error.message : ((error as Error).stack ?? String(error))
  process.stderr.write(`lembas-proxy: ${message}\n`)
  process.exit(error instanceof LembasError && error.kind === 'config_invalid' ? 2 : 1)
})
