/**
 * As a new user gets it: `npm pack`, installed into an empty folder, its `lembas-proxy` command
 * started with one upstream per API, and a team's three agents (chat, Responses, Messages)
 * through it; the dashboard and /stats answer. The package holds what the source builds, nothing
 * left over from an older build.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { packageRoot } from '../../src/config/loop.js'
import { startCli, stopCli } from '../helpers/cli.js'
import { DOORS, type Door, type DoorCall } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'

const ROOT = packageRoot()
const FILE = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join('\n') + '\n'

function script(door: Door) {
  let n = 0
  return (request: RecordedRequest) => {
    const step = n++
    if (step >= 2) return door.respond(request, { text: 'Done.' }, step)
    const call: DoorCall = { id: `call_${step}`, name: 'Bash', args: { command: 'cat a.txt' } }
    return door.respond(request, { calls: [call] }, step)
  }
}

/** Every file the tarball has under dist/src must come from a file of src/. */
function leftovers(files: readonly string[]): string[] {
  return files
    .filter((f) => f.startsWith('package/dist/src/') && f.endsWith('.js'))
    .map((f) => f.slice('package/dist/'.length).replace(/\.js$/, '.ts'))
    .filter((source) => !existsSync(join(ROOT, source)))
}

test('installed from npm pack: one proxy for a team’s agents, its dashboard and /stats', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-packed-'))
  const fakes = new Map<string, Awaited<ReturnType<typeof startFakeUpstream>>>()
  try {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT })
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!
    const files = execFileSync('tar', ['tzf', join(dir, tarball)], { encoding: 'utf8' })
      .trim()
      .split('\n')
    assert.deepEqual(leftovers(files), [], 'no module without its source')
    for (const needed of ['package/loop.json', 'package/dist/src/cli.js', 'package/README.md'])
      assert.ok(files.includes(needed), `${needed} in the package`)
    assert.ok(!files.some((f) => f.startsWith('package/test/')), 'no tests in the package')

    // An empty project installs it. The native SQLite module is compiled by npm on a user's
    // machine (about two minutes here); the one this checkout built is the same code for the
    // same Node, so it is copied instead of compiled again.
    const app = join(dir, 'app')
    execFileSync('mkdir', ['-p', app])
    writeFileSync(join(app, 'package.json'), '{"name":"trial","private":true}\n')
    execFileSync(
      'npm',
      ['install', '--ignore-scripts', '--no-audit', '--no-fund', join(dir, tarball)],
      { cwd: app, stdio: 'ignore' },
    )
    const native = 'node_modules/better-sqlite3/build/Release'
    execFileSync('mkdir', ['-p', join(app, native)])
    copyFileSync(
      join(ROOT, native, 'better_sqlite3.node'),
      join(app, native, 'better_sqlite3.node'),
    )
    const bin = join(app, 'node_modules/.bin/lembas-proxy')
    assert.match(execFileSync(bin, ['--help'], { encoding: 'utf8' }), /--upstream-messages/)

    for (const door of DOORS) {
      const fake = await startFakeUpstream()
      fake.setScript(script(door))
      fakes.set(door.name, fake)
    }
    const proxy = await startCli(
      [
        '--port',
        '0',
        '--store',
        'sqlite:' + join(dir, 'lembas.db'),
        '--upstream',
        fakes.get('chat')!.url,
        '--upstream-messages',
        fakes.get('messages')!.url,
        '--upstream-responses',
        fakes.get('responses')!.url,
        '--price-per-mtok',
        '3',
      ],
      {},
      {},
      bin,
    )
    try {
      for (const door of DOORS) {
        const client = door.client({ stream: true })
        client.user('read a.txt twice')
        for (let i = 0; i < 3; i++) {
          const answer = await client.send(proxy.url)
          assert.equal(answer.status, 200, answer.raw.slice(0, 200))
          if (answer.calls.length === 0) break
          client.results(answer.calls, [FILE])
        }
        const sent = fakes.get(door.name)!.requests.at(-1)!.body
        assert.match(sent, /Unchanged since #0001/, `${door.name}: shaped by the installed proxy`)
      }
      const stats = (await (await fetch(proxy.url + '/stats')).json()) as any
      assert.deepEqual(stats.sessions.map((s: any) => s.door).sort(), [
        'chat',
        'messages',
        'responses',
      ])
      assert.ok(stats.totals.moneySaved > 0, `money saved: ${stats.totals.moneySaved}`)
      const page = await fetch(proxy.url + '/')
      assert.equal(page.status, 200)
      assert.match(await page.text(), /<title>lembas-proxy<\/title>/)
    } finally {
      await stopCli(proxy)
    }
  } finally {
    for (const fake of fakes.values()) await fake.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
