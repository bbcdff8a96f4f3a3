import { defineProfile } from '../define-profile.js'

/**
 * mini-swe-agent 2.x with tool calls (SWE-agent/mini-swe-agent; the real sessions of
 * research/real-traces): one `bash` tool, each command in a new subshell (hence `cd /testbed &&
 * …`), stdout and stderr merged. Reads are `cat`, `sed -n`, `head`, `nl -ba … | sed -n`
 * (src/tools/shell.ts). Its observation templates wrap every output:
 *
 * - config/default.yaml, benchmarks/swebench*.yaml, the models' default:
 *   `[<exception>…</exception>\n]<returncode>N</returncode>\n<output>\n…</output>`; an output
 *   of 10,000 characters or more is cut to its first and last 5,000 under `<warning>`,
 *   `<output_head>`, `<elided_chars>` and `<output_tail>` instead of `<output>`.
 * - config/mini.yaml (the `mini` CLI): `{\n  "returncode": N,\n  "output": "…"\n}`, cut into
 *   `"output_head"`, `"output_tail"`, `"elided_chars"`.
 *
 * Only a run that returned 0, and whose output is whole, is a file's lines: a cut output (its head
 * and tail, with a middle the model never saw) and an exception are never a read.
 */
export const miniSweAgent = defineProfile({
  name: 'mini-swe-agent',
  tools: [{ kind: 'shell', names: ['bash'], command: ['command'] }],
  shellEnvelopes: [
    {
      any: /^(?:<exception>[\s\S]*?<\/exception>\n)?<returncode>-?\d+<\/returncode>\n/,
      success: /^<returncode>0<\/returncode>\n<output>\n(?<body>[\s\S]*)<\/output>$/,
    },
    { any: /^\{\n {2}"returncode": -?\d+,\n/, json: { output: 'output', exit: 'returncode' } },
  ],
})
