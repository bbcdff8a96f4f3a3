import { after, describe, test } from 'node:test'
import { firstDifference } from '../helpers/visible.js'
import { loadSuite, rules } from './load.js'
import { simulate } from './simulate.js'

const suite = loadSuite()
let passed = 0
let failed = 0

describe(`conformance: context ${suite.spec}`, () => {
  for (const testCase of suite.cases) {
    test(`${testCase.id} (${testCase.section}): ${testCase.description}`, () => {
      const problems: string[] = []
      for (const { step, actual, expected } of simulate(testCase.steps, rules)) {
        if (actual === expected) continue
        if (actual === null || expected === null) {
          problems.push(
            `step ${step}: expected ${expected === null ? 'no text' : 'a text'}, got ${actual === null ? 'none' : JSON.stringify(actual.slice(0, 200))}`,
          )
        } else {
          problems.push(`step ${step}: ${firstDifference(expected, actual)}`)
        }
      }
      if (problems.length > 0) {
        failed++
        throw new Error(`✘ ${testCase.id}: ${testCase.description}\n  ${problems.join('\n  ')}`)
      }
      passed++
    })
  }
})

after(() => {
  console.log(`conformance: ${passed} passed, ${failed} failed`)
})
