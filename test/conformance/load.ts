import { readFileSync } from 'node:fs'
import { loadLoop, packageRoot } from '../../src/config/loop.js'
import { Suite } from './case-schema.js'

export const suitePath = packageRoot() + 'conformance/context.json'

export function loadSuite() {
  return Suite.parse(JSON.parse(readFileSync(suitePath, 'utf8')))
}

export const rules = loadLoop().context
