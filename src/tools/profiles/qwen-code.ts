import { defineProfile } from '../define-profile.js'

/** Qwen Code 0.24: research/agents.md §3, and test/fixtures/agents/qwen-code. */
export const qwenCode = defineProfile({
  name: 'qwen-code',
  tools: [
    // offset is 0-based, as its schema says; the merged read_file rule takes the base from there.
    {
      kind: 'read',
      names: ['read_file'],
      path: ['file_path'],
      range: [{ offset: 'offset', limit: 'limit', base: 'schema' }],
    },
    {
      kind: 'edit',
      names: ['edit'],
      path: ['file_path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    { kind: 'write', names: ['write_file'], path: ['file_path'], content: ['content'] },
    { kind: 'list', names: ['list_directory'] },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep_search'] },
    { kind: 'shell', names: ['run_shell_command'], command: ['command'], dir: ['directory'] },
  ],
  // Its count of lines is not the file's (it counts the empty string after a final newline), so
  // only the range is taken from the header.
  envelopes: [
    {
      pattern:
        /^Showing lines (?<start>\d+)-(?<end>\d+) of \d+ total lines\.\n\n---\n\n(?<body>[\s\S]*)$/,
    },
  ],
  shellEnvelopes: [
    {
      any: /^Command: [^\n]*\nDirectory: /,
      success:
        /^Command: [^\n]*\nDirectory: [^\n]*\nOutput: (?<body>[\s\S]*?)\nError: \(none\)\nExit Code: 0\n/,
    },
  ],
  success: [
    { pattern: /^The file: [^\n]+ has been updated\. Showing lines/ },
    { pattern: /^Created new file: [^\n]+ with provided content\./, created: true },
    { pattern: /^Successfully created and wrote to new file: [^\n]+\.$/, created: true },
    { pattern: /^Successfully overwrote file: [^\n]+\.$/ },
  ],
  failures: [/^Cannot display content of binary file/, /^Cannot read file/, /^File not found/],
  agentStubs: [
    /^\[File .* unchanged since last read in this session/,
    /^\[Old tool result content cleared\]/,
    /^\[Old inline media cleared/,
  ],
  // The snapshot starts the summary's part, unless the model wrote a line before it: then the
  // sentence the CLI puts after every snapshot (0.24.4) finds it.
  compaction: [
    {
      role: 'user',
      pattern:
        /^<state_snapshot>[\s\S]*<\/state_snapshot>|<\/state_snapshot>\s*Resume the prior task using the summary above\./,
    },
  ],
})
