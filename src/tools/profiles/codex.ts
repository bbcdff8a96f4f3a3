import { defineProfile } from '../define-profile.js'

/** Codex CLI's tools where they reach a chat-completions endpoint: research/agents.md §4. */
export const codex = defineProfile({
  name: 'codex',
  tools: [
    {
      kind: 'read',
      names: ['read_file'],
      path: ['file_path'],
      range: [{ offset: 'offset', limit: 'limit', base: 1 }],
    },
    { kind: 'patch', names: ['apply_patch'], patch: ['input'] },
    {
      kind: 'shell',
      names: ['shell', 'shell_command', 'exec_command'],
      command: ['command', 'cmd'],
      dir: ['workdir'],
    },
    { kind: 'list', names: ['list_dir'] },
    { kind: 'grep', names: ['grep_files'] },
  ],
  shellEnvelopes: [
    {
      // `Total output lines: N` before `Output:` is written only when Codex cut the output.
      any: /^Exit code: \d+\nWall time: /,
      success: /^Exit code: 0\nWall time: [^\n]*\nOutput:\n(?<body>[\s\S]*)$/,
    },
    {
      // exec_command (Codex CLI 0.171): a chunk of a process's output, with its exit code.
      any: /^Chunk ID: [^\n]*\nWall time: /,
      success:
        /^Chunk ID: [^\n]*\nWall time: [^\n]*\nProcess exited with code 0\n(?:Original token count: \d+\n)?Output:\n(?<body>[\s\S]*)$/,
      // Past its budget (10,000 bytes by default) Codex keeps a head and a tail around
      // `…N chars truncated…` (or `…N tokens truncated…`), cut mid-line, after this header.
      cut: /^Warning: truncated output \(original token count: \d+\)\nTotal output lines: \d+\n/,
    },
    {
      // exec_command running `apply_patch` (0.171): Codex's own answer inside a second wrapper.
      any: /^Wall time: [^\n]*\nOutput:\nExit code: \d+\n/,
      success:
        /^Wall time: [^\n]*\nOutput:\nExit code: 0\nWall time: [^\n]*\nOutput:\n(?<body>[\s\S]*)$/,
    },
    // A structured shell result: {"output": …, "metadata": {"exit_code": 0, …}}.
    // Its output starts `Total output lines: N` when Codex cut it.
    {
      any: /^\{"output":/,
      json: { output: 'output', exit: 'metadata.exit_code' },
      cut: /^Total output lines: \d+\n/,
    },
  ],
  success: [{ pattern: /^Success\. Updated the following files:\n/ }],
  // A call of a tool this Codex does not offer (0.171: `shell_command`) is answered so; a run
  // it could not start (a `workdir` that is not there) with its own error.
  failures: [/^unsupported call: /, /^exec_command failed: /],
  compaction: [
    {
      role: 'user',
      pattern:
        /^Another language model started to solve this problem and produced a summary of its thinking process\./,
    },
    // The built-in `openai` provider compacts on the server (0.171: an input that ends
    // `compaction_trigger`); its summary comes back as an encrypted `compaction` item.
    { role: 'compaction', pattern: /^/ },
  ],
})
