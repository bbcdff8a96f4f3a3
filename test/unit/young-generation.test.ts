/**
 * When `--semi-space-mb` makes the process start itself again with node's
 * `--max-semi-space-size`, and with which command line (its effect on the real command line is
 * test/e2e/young-generation.test.ts's).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { capYoungGeneration } from '../../src/http/young-generation.js'

function fakeProcess(execArgv: string[], env: NodeJS.ProcessEnv = {}, execve = true) {
  const calls: { file: string; args: string[]; env: NodeJS.ProcessEnv }[] = []
  const proc = {
    execArgv,
    argv: ['/usr/bin/node', '/app/dist/src/cli.js', '--port', '0'],
    env,
    execPath: '/usr/bin/node',
    ...(execve
      ? {
          execve: ((file: string, args: string[], env: NodeJS.ProcessEnv) => {
            calls.push({ file, args, env })
          }) as unknown as (file: string, args: string[], env: NodeJS.ProcessEnv) => never,
        }
      : {}),
  }
  return { proc, calls }
}

test('it starts node again with the flag first, then node’s own flags, the script and its flags', () => {
  const { proc, calls } = fakeProcess(['--import', 'tsx'], { LEMBAS_PORT: '1' })
  assert.equal(capYoungGeneration(16, proc), true)
  assert.deepEqual(calls, [
    {
      file: '/usr/bin/node',
      args: [
        '/usr/bin/node',
        '--max-semi-space-size=16',
        '--import',
        'tsx',
        '/app/dist/src/cli.js',
        '--port',
        '0',
      ],
      env: { LEMBAS_PORT: '1' },
    },
  ])
})

test('0, a node without process.execve (Node 20), or a size given to node: left as it is', () => {
  for (const [mb, execArgv, env, execve] of [
    [0, [], {}, true],
    [16, [], {}, false],
    [16, ['--max-semi-space-size=8'], {}, true],
    [16, ['--max_semi_space_size', '8'], {}, true],
    [16, [], { NODE_OPTIONS: '--trace-gc --max-semi-space-size=32' }, true],
  ] as const) {
    const { proc, calls } = fakeProcess([...execArgv], { ...env }, execve)
    assert.equal(capYoungGeneration(mb, proc), false, JSON.stringify({ mb, execArgv, env, execve }))
    assert.deepEqual(calls, [])
  }
})

test('an execve that fails leaves the process running as it is', () => {
  const proc = {
    execArgv: [],
    argv: ['/usr/bin/node', '/app/dist/src/cli.js'],
    env: {},
    execPath: '/usr/bin/node',
    execve: (() => {
      throw Object.assign(new Error('EACCES'), { code: 'EACCES' })
    }) as unknown as (file: string, args: string[], env: NodeJS.ProcessEnv) => never,
  }
  assert.equal(capYoungGeneration(16, proc), false)
})
