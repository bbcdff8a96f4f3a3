/**
 * What `--elide` costs a request on the proxy, beside the same session without it, in one run
 * (the ratios are what to read):
 *
 *   node --import tsx bench/elide.ts [--size 1mb] [--sessions 4] [--steps 12]
 *
 * Sessions of the bench's workload, every step one new result; with the defaults
 * (`--elide-threshold 30 --elide-keep 1`) each step's request elides the result the one before
 * it added, a batch a request:
 * - off: the proxy without `--elide` (the fast path);
 * - elide: with `--elide`, as it runs;
 * - elide, full path: the same with the fast path off (`spliceChars: 0`): what every request
 *   that made a batch cost while batches took the full path.
 * p50 of the whole request, the first request of each session left out. Everything runs in this
 * process (the proxy, a fake upstream, the client), as the tests do.
 */
import { parseArgs } from 'node:util'
import { createStore } from '../src/store/index.js'
import { startFakeUpstream } from '../test/helpers/fake-upstream.js'
import { defaultElide, startProxy } from '../test/helpers/proxy.js'
import { postSession } from './client.js'
import { sessionFor, sizeNamed } from './workload.js'

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '1mb' },
    sessions: { type: 'string', default: '4' },
    steps: { type: 'string', default: '12' },
  },
})
const size = sizeNamed(values.size)
const sessions = Number(values.sessions)
const steps = Number(values.steps)

const upstream = await startFakeUpstream()
const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
const targets = {
  off: await startProxy({ upstreamUrl: upstream.url, store }),
  elide: await startProxy({ upstreamUrl: upstream.url, store, elide: defaultElide() }),
  'elide, full path': await startProxy({
    upstreamUrl: upstream.url,
    store,
    elide: defaultElide(),
    spliceChars: 0,
  }),
}
type Name = keyof typeof targets
const times = Object.fromEntries(Object.keys(targets).map((n) => [n, [] as number[]])) as Record<
  Name,
  number[]
>

try {
  for (let s = 0; s < sessions; s++) {
    // One session per target, the same bodies; the targets take turns at each step.
    const names = Object.keys(targets) as Name[]
    const runs = names.map((name) => ({ name, session: sessionFor(size, 2000 + s, false) }))
    for (const { name, session } of runs)
      await postSession(targets[name].url, session.base(), `elide-${s}-${name}`)
    for (let step = 0; step < steps; step++) {
      const turn = [...runs.slice(step % runs.length), ...runs.slice(0, step % runs.length)]
      for (const { name, session } of turn)
        times[name].push(await postSession(targets[name].url, session.next(), `elide-${s}-${name}`))
    }
  }
} finally {
  for (const proxy of Object.values(targets)) await proxy.close()
  await store.close()
  await upstream.close()
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const off = median(times.off)
process.stdout.write(
  `${size.name}, ${sessions} sessions of ${steps} steps, p50 of the whole request:\n` +
    (Object.keys(times) as Name[])
      .map(
        (n) =>
          `${n.padEnd(17)} ${median(times[n]).toFixed(1).padStart(7)} ms  ${(median(times[n]) / off).toFixed(1)}x off`,
      )
      .join('\n') +
    '\n',
)
