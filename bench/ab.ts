/**
 * Two builds of lembas side by side on the same sessions: the proxy's CPU per request on the
 * fast path, each build in its own process pinned to the same core, in alternating rounds (the
 * ratio is what to read; this machine's noise moves both alike):
 *
 *   git worktree add /tmp/base <commit> && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   (cd /tmp/base && npm run build) && npm run build
 *   node --import tsx bench/ab.ts --base /tmp/base [--size 10kb|1mb|8mb] [--rounds 20]
 *
 * Each round starts `--sessions` new sessions in each build (their first requests unmeasured),
 * sends one more request each (unmeasured: the first on the fast path), then measures
 * `--steps` requests of each session, one at a time, each the previous one plus one tool result.
 * The first rounds warm the code up and are left out of the median (shown in the rounds list).
 * `--args` and `--base-args` add flags to either side: `--base /path/to/this/checkout
 * '--args=--store memory:'` compares one build with itself on two stores.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { Agent, request } from 'undici'
import { packageRoot } from '../src/config/loop.js'
import { cpuMsOf, freePort, spawnChild, stopAll } from './children.js'
import { sessionFor, sizeNamed } from './workload.js'

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    size: { type: 'string', default: '10kb' },
    rounds: { type: 'string', default: '20' },
    sessions: { type: 'string' },
    steps: { type: 'string' },
    'base-args': { type: 'string', default: '' },
    args: { type: 'string', default: '' },
  },
})
if (!values.base) throw new Error('--base DIR: a built checkout of the build to compare with')
const size = sizeNamed(values.size)
const rounds = Number(values.rounds)
// Enough requests a round for /proc's 10 ms CPU ticks to be a few percent at most.
const sessions = Number(values.sessions ?? (size.bytes >= 1 << 20 ? 8 : 60))
const steps = Number(values.steps ?? (size.bytes >= 1 << 20 ? 25 : 8))
const WARM_ROUNDS = Math.min(8, Math.floor(rounds / 2))
if (!(rounds >= 2 && sessions >= 1 && steps >= 1))
  throw new Error('--rounds 2+, --sessions and --steps 1+')

const dir = mkdtempSync(join(tmpdir(), 'lembas-ab-'))
const upstream = await spawnChild({
  name: 'fake-upstream',
  command: process.execPath,
  args: ['--import', 'tsx', packageRoot() + 'bench/fake-upstream.ts', String(await freePort())],
  cpus: '0',
  ready: /listening on (http:\/\/\S+)/,
})

async function lembas(name: string, root: string, extra: string) {
  const port = await freePort()
  const child = await spawnChild({
    name,
    command: process.execPath,
    args: [
      resolve(root, 'dist/src/cli.js'),
      ...['--port', String(port), '--upstream', upstream.url + '/v1'],
      ...['--store', `sqlite:${join(dir, name + '.db')}`, '--log-level', 'warn'],
      ...extra.split(' ').filter(Boolean),
    ],
    cpus: '1',
    readyPort: port,
  })
  return { name, child, url: `http://127.0.0.1:${port}`, cpu: [] as number[] }
}
const builds = [
  await lembas('base', values.base, values['base-args']),
  await lembas('this', packageRoot(), values.args),
]
const agent = new Agent({ connections: 1 })

async function post(
  build: { name: string; url: string },
  body: Buffer,
  session: string,
): Promise<void> {
  const response = await request(`${build.url}/v1/chat/completions`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    dispatcher: agent,
  })
  await response.body.text()
  if (response.statusCode !== 200) throw new Error(`${build.name}: status ${response.statusCode}`)
}

try {
  for (let round = 0; round < rounds; round++) {
    for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
      const agents = Array.from({ length: sessions }, (_, i) => ({
        session: sessionFor(size, round * 1000 + i, false),
        id: `ab-${round}-${i}-${build.name}`,
      }))
      for (const a of agents) await post(build, a.session.base(), a.id)
      for (const a of agents) await post(build, a.session.next(), a.id)
      const before = cpuMsOf(build.child.pid)!
      for (let step = 0; step < steps; step++)
        for (const a of agents) await post(build, a.session.next(), a.id)
      build.cpu.push((cpuMsOf(build.child.pid)! - before) / (steps * sessions))
    }
  }
} finally {
  await agent.close()
  await stopAll()
  rmSync(dir, { recursive: true, force: true })
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}
console.log(
  `${size.name}, ${sessions} sessions x ${steps} steps a round, ${rounds} rounds (first ${WARM_ROUNDS} warm-up)`,
)
for (const build of builds)
  console.log(
    `${build.name.padEnd(5)} CPU ms/request, median ${median(build.cpu.slice(WARM_ROUNDS)).toFixed(3)}` +
      `  rounds: ${build.cpu.map((ms) => ms.toFixed(2)).join(' ')}`,
  )
const [base, mine] = builds.map((build) => median(build.cpu.slice(WARM_ROUNDS)))
console.log(`this / base: ${(mine! / base!).toFixed(3)}`)
