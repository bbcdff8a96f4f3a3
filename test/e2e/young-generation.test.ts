/**
 * `--semi-space-mb` on the real command line: on a Node with `process.execve` (24, 26; CI runs
 * the suite on both) the proxy runs with node's `--max-semi-space-size`, the same process, and
 * V8's young generation is that size; `0` leaves V8's own. Node 20 has no `process.execve` and
 * needs none (its own semi-space is 16 MB): there the command line stays as it was started.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { startCli, stopCli } from '../helpers/cli.js'

const canReplace = typeof (process as { execve?: unknown }).execve === 'function'

function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
}

async function answersHealth(url: string): Promise<void> {
  const response = await fetch(url + '/healthz')
  assert.equal(response.status, 200)
}

test('the proxy runs with the young generation capped, in the process that was started', async () => {
  // The default (16 MB a semi-space), and a size given.
  for (const [flags, size] of [
    [[], 16],
    [['--semi-space-mb', '12'], 12],
  ] as const) {
    const proxy = await startCli(['--port', '0', '--store', 'memory:', ...flags])
    try {
      await answersHealth(proxy.url)
      const args = commandLine(proxy.child.pid!)
      if (canReplace) assert.ok(args.includes(`--max-semi-space-size=${size}`), args.join(' '))
      else assert.ok(!args.some((arg) => arg.startsWith('--max-semi-space-size')), args.join(' '))
    } finally {
      await stopCli(proxy)
    }
  }
})

test('--semi-space-mb 0, or a size given to node, is left as it is', async () => {
  for (const [flags, env] of [
    [['--semi-space-mb', '0'], {}],
    [[], { NODE_OPTIONS: '--max-semi-space-size=32' }],
  ] as const) {
    const proxy = await startCli(['--port', '0', '--store', 'memory:', ...flags], { ...env })
    try {
      await answersHealth(proxy.url)
      const args = commandLine(proxy.child.pid!)
      assert.ok(!args.some((arg) => arg.startsWith('--max-semi-space-size')), args.join(' '))
    } finally {
      await stopCli(proxy)
    }
  }
})
