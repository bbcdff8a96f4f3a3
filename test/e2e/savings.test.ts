/**
 * What the edit answers save where agents echo the whole file (Cline classic's
 * `<final_file_content>`): measured through the proxy on a 400-line file.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { chatCompletion, startFakeUpstream } from '../helpers/fake-upstream.js'
import { postChat, startProxy } from '../helpers/proxy.js'

const CLINE_TOOLS = ['read_file', 'replace_in_file'].map((name) => ({
  type: 'function',
  function: { name, parameters: { type: 'object', properties: { path: { type: 'string' } } } },
}))

test("a Cline classic edit's whole-file echo becomes a diff a small fraction of its size", async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-cline-')))
  const lines = Array.from(
    { length: 400 },
    (_, i) => `export const value${i + 1} = ${i + 1} // a line of code`,
  )
  const edited = lines.map((line, i) => (i === 199 ? line.replace('= 200', '= 2000') : line))
  writeFileSync(join(dir, 'big.ts'), edited.join('\n') + '\n')
  const upstream = await startFakeUpstream(() => ({ json: chatCompletion({ content: 'ok' }) }))
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    workspace: await createWorkspace([dir]),
  })
  try {
    const read = `[read_file for 'big.ts'] Result:\n${lines.map((line, i) => `${i + 1} | ${line}`).join('\n')}\n\n(File has 400 lines total.)`
    const echo =
      "[replace_in_file for 'big.ts'] Result:\nThe content was successfully saved to big.ts.\n\nHere is the full, updated content of the file that was saved:\n\n" +
      `<final_file_content path="big.ts">\n${edited.join('\n')}\n\n</final_file_content>\n\nIMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference.\n\n`
    const diff =
      '------- SEARCH\nexport const value200 = 200 // a line of code\n=======\nexport const value200 = 2000 // a line of code\n+++++++ REPLACE'
    const body = {
      model: 'm',
      tools: CLINE_TOOLS,
      messages: [
        { role: 'system', content: 'You are Cline.' },
        { role: 'user', content: 'edit big.ts' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'r1',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"big.ts"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'r1', content: read },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'e1',
              type: 'function',
              function: {
                name: 'replace_in_file',
                arguments: JSON.stringify({ path: 'big.ts', diff }),
              },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'e1', content: echo },
      ],
    }
    const reply = await postChat(proxy.url, body)
    assert.equal(reply.status, 200)
    const sent = upstream.requests[0]!.json.messages.at(-1).content as string
    assert.match(sent, /^\[#0002 big\.ts sha [0-9a-f]{8}\]\n@@ -197,7 \+197,7 @@\n/)
    assert.ok(
      sent.includes(
        '-export const value200 = 200 // a line of code\n+export const value200 = 2000 // a line of code',
      ),
    )
    const share = sent.length / echo.length
    console.log(
      `cline classic edit of a 400-line file: ${echo.length} chars echoed, ${sent.length} sent (${(share * 100).toFixed(1)}%)`,
    )
    assert.ok(share < 0.05, `the answer is ${(share * 100).toFixed(1)}% of the echo`)
  } finally {
    await proxy.close()
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
