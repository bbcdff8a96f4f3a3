/**
 * What a session's first request on a process costs, beside a request on the fast path, in one
 * run (the ratios are what to read):
 *
 *   node --import tsx bench/first-request.ts [--sessions N] [--size 10kb|1mb|8mb]
 *
 * - new: a session the proxy has never seen (every result in its history is new to it);
 * - restart: the next request of a known session after the proxy restarted (the same SQLite
 *   file, nothing in memory): its whole history is parsed, and known results read back;
 * - saved: the same after a crash, from the states the process saved to the store in the
 *   background (src/pipeline/state-saves.ts): it goes on from the last save and parses what
 *   came since (here two requests; `--save-states-s` bounds how old a save is);
 * - handed on: the same after a graceful stop, which handed the fast path's states on through
 *   the store (src/pipeline/resume.ts): it goes on from the session's last request;
 * - fast: the request after that, which goes on from the previous one.
 *
 * Everything runs in this process (the proxy, a fake upstream, the client), as the tests do.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { silentLogger } from '../src/log.js'
import { Memo, MEMO_ENTRIES } from '../src/memo.js'
import { handOnStates, takeOnStates } from '../src/pipeline/resume.js'
import { SpliceCache } from '../src/pipeline/splice.js'
import { StateSaves } from '../src/pipeline/state-saves.js'
import { createStore } from '../src/store/index.js'
import { startFakeUpstream } from '../test/helpers/fake-upstream.js'
import { startProxy } from '../test/helpers/proxy.js'
import { postSession } from './client.js'
import { sessionFor, sizeNamed } from './workload.js'

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '12' },
    size: { type: 'string', default: '1mb' },
  },
})
const size = sizeNamed(values.size)
const sessions = Number(values.sessions)
// The first two sessions only warm the code up (see the median below): a third is measured.
if (!Number.isInteger(sessions) || sessions < 3)
  throw new Error(`--sessions: a whole number of at least 3, got ${values.sessions}`)

const dir = mkdtempSync(join(tmpdir(), 'lembas-first-'))
const upstream = await startFakeUpstream()

const times = {
  new: [] as number[],
  restart: [] as number[],
  saved: [] as number[],
  'handed on': [] as number[],
  fast: [] as number[],
}
/** What the command line gives a process's state saves (`--save-states-s 30`). */
const savesOptions = () => ({
  fingerprint: 'same',
  everyMs: 30_000,
  unsaved: new Memo<number>(MEMO_ENTRIES),
  log: silentLogger,
})
/** A process's fast-path memory, as the command line makes it (64 MB). */
const spliceCache = () => new SpliceCache(64 * 1024 * 1024)
try {
  for (let s = 0; s < sessions; s++) {
    const session = sessionFor(size, 1000 + s, false)
    const store = await createStore(`sqlite:${join(dir, 'store.db')}`, { idleTtlMs: 86_400_000 })
    const name = `first-request-${s}`
    let splice = spliceCache()
    const saving = new StateSaves(splice, store, savesOptions())
    let proxy = await startProxy({ upstreamUrl: upstream.url, store, splice })
    times.new.push(await postSession(proxy.url, session.base(), name))
    await postSession(proxy.url, session.next(), name)
    await saving.saveChanged()
    await proxy.close()
    proxy = await startProxy({ upstreamUrl: upstream.url, store, splice: spliceCache() })
    times.restart.push(await postSession(proxy.url, session.next(), name))
    await proxy.close()
    // The request after a crash of the process that saved: the next one restores the save.
    const restoring = spliceCache()
    const saves = new StateSaves(restoring, store, savesOptions())
    proxy = await startProxy({ upstreamUrl: upstream.url, store, splice: restoring, saves })
    times.saved.push(await postSession(proxy.url, session.next(), name))
    await proxy.close()
    // A graceful stop of the process that served the last request, then a new one.
    const handover = { store, name: 'bench', fingerprint: 'same', log: silentLogger }
    await handOnStates(splice, handover)
    splice = spliceCache()
    await takeOnStates(splice, handover)
    proxy = await startProxy({ upstreamUrl: upstream.url, store, splice })
    times['handed on'].push(await postSession(proxy.url, session.next(), name))
    times.fast.push(await postSession(proxy.url, session.next(), name))
    await proxy.close()
    await store.close()
  }
} finally {
  await upstream.close()
  rmSync(dir, { recursive: true, force: true })
}

// The first two sessions warm the code up.
const median = (xs: number[]) =>
  [...xs.slice(2)].sort((a, b) => a - b)[Math.floor((xs.length - 2) / 2)]!
const fast = median(times.fast)
const line = (name: keyof typeof times) =>
  `${name.padEnd(10)} ${median(times[name]).toFixed(1).padStart(7)} ms  ${(median(times[name]) / fast).toFixed(1)}x the fast path`
process.stdout.write(
  `${size.name}, ${sessions} sessions, p50 of the whole request:\n` +
    Object.keys(times)
      .map((n) => line(n as keyof typeof times))
      .join('\n') +
    '\n',
)
