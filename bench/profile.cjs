/**
 * A CPU profile of a lembas process under the bench, preloaded through --lembas-env:
 *
 *   npm run bench -- --lembas-dist --only lembas-sqlite --phases throughput --concurrency 1 \
 *     --lembas-env NODE_OPTIONS='--require ./bench/profile.cjs'
 *   node --import tsx bench/profile-top.ts bench/profiles/lembas-*.cpuprofile
 *
 * Node refuses --cpu-prof in NODE_OPTIONS; the inspector's profiler does the same from inside.
 * The profile is written when the bench stops the process (SIGTERM), which then exits at once.
 */
const inspector = require('node:inspector')
const { mkdirSync, writeFileSync } = require('node:fs')
const { join } = require('node:path')

const session = new inspector.Session()
session.connect()
session.post('Profiler.enable', () =>
  session.post('Profiler.setSamplingInterval', { interval: 250 }, () =>
    session.post('Profiler.start'),
  ),
)

function stop() {
  session.post('Profiler.stop', (error, result) => {
    if (!error) {
      const folder = join(__dirname, 'profiles')
      mkdirSync(folder, { recursive: true })
      writeFileSync(
        join(folder, `lembas-${process.pid}.cpuprofile`),
        JSON.stringify(result.profile),
      )
    }
    process.exit(0)
  })
}
process.prependOnceListener('SIGTERM', stop)
process.prependOnceListener('SIGINT', stop)
