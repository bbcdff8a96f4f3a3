/**
 * The live tests' check of an installed agent CLI (test/e2e/live/agents.ts): the pinned version
 * of the package and of each package installed beside it, on a made-up npm prefix.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { AGENT_PACKAGES, problem } from '../e2e/live/agents.js'

function prefix(versions: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-agents-'))
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true })
  writeFileSync(join(dir, 'node_modules', '.bin', AGENT_PACKAGES.kilo.bin), '')
  for (const [name, version] of Object.entries(versions)) {
    mkdirSync(join(dir, 'node_modules', name), { recursive: true })
    writeFileSync(
      join(dir, 'node_modules', name, 'package.json'),
      JSON.stringify({ name, version }),
    )
  }
  return dir
}

test('Kilo CLI: the launcher and its platform binary both at the pin', (t) => {
  const pin = AGENT_PACKAGES.kilo.version
  const [platform] = AGENT_PACKAGES.kilo.with
  const good = prefix({ [AGENT_PACKAGES.kilo.name]: pin, [platform]: pin })
  // The launcher at the pin runs whatever platform binary is there: an older one is refused.
  const mixed = prefix({ [AGENT_PACKAGES.kilo.name]: pin, [platform]: '0.0.1' })
  const missing = prefix({ [AGENT_PACKAGES.kilo.name]: pin })
  t.after(() => [good, mixed, missing].forEach((d) => rmSync(d, { recursive: true, force: true })))
  assert.equal(problem('kilo', good), undefined)
  assert.equal(problem('kilo', mixed), `${platform} is 0.0.1, the test pins ${pin}`)
  assert.equal(problem('kilo', missing), `${platform} is ?, the test pins ${pin}`)
})
