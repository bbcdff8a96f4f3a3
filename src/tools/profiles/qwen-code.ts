import { defineProfile } from '../define-profile.js'

/** read_file's header, which it writes only when it did not show the whole file, then `rest`. */
const showing = (rest: string) =>
  new RegExp(
    String.raw`^Showing lines (?<start>\d+)-\d+ of (?:at least )?\d+ total lines\.\n\n---\n\n` +
      rest,
  )

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
  // only the first line is taken from the header; it writes the header only when it did not show
  // the whole file (a range, its line limit, its 25,000-character budget; `at least N` past 10 MB).
  // Past the budget (0.24.4) the last line is cut and `... [truncated]` put after it, or, cut by
  // bytes, on a line of its own after a line that may be cut too: those lines are not the file's.
  envelopes: [
    {
      pattern: showing(String.raw`(?:(?<body>[\s\S]*)\n)?[^\n]*\n\.\.\. \[truncated\]$`),
      partial: true,
    },
    {
      pattern: showing(String.raw`(?:(?<body>[\s\S]*)\n)?[^\n]*\.\.\. \[truncated\]$`),
      partial: true,
    },
    { pattern: showing(String.raw`(?<body>[\s\S]*)$`), partial: true },
  ],
  // run_shell_command: its wrapper, `Output: (empty)` when the run printed nothing (an empty file,
  // or an output the CLI lost now and then: no file's lines either way). Past its budget (30,000
  // characters) the whole wrapper is cut in the middle under a notice, the output saved to a file
  // (0.24.4): about 800 characters of its head and 3,200 of its tail, each end cut inside a line
  // (`...`), around `\n\n---\n... [CONTENT TRUNCATED] ...\n---\n\n`; a result kept in a file
  // instead shows a preview in `<persisted-output>`. A cut output is never a read.
  shellEnvelopes: [
    { any: /^Tool output was too large and has been truncated\.\n/ },
    { any: /\n\n---\n\.\.\. \[CONTENT TRUNCATED\] \.\.\.\n---\n\n/ },
    { any: /^(?:<persisted-output>\n)?Output too large \(/ },
    {
      any: /^Command: [^\n]*\nDirectory: /,
      success:
        /^Command: [^\n]*\nDirectory: [^\n]*\nOutput: (?!\(empty\)\nError: )(?<body>[\s\S]*?)\nError: \(none\)\nExit Code: 0\n/,
    },
  ],
  success: [
    // Its edit corrects an old text it does not find (quotes normalised, unescaped): only a
    // replay on the file as read says what changed.
    { pattern: /^The file: [^\n]+ has been updated\. Showing lines/, inexact: true },
    { pattern: /^Created new file: [^\n]+ with provided content\./, created: true },
    { pattern: /^Successfully created and wrote to new file: [^\n]+\.$/, created: true },
    { pattern: /^Successfully overwrote file: [^\n]+\.$/ },
  ],
  failures: [
    /^Cannot display content of binary file/,
    /^Cannot read file/,
    /^File not found/,
    // read_file's own checks of its arguments (0.24.4).
    /^File path must be absolute/,
    /^(?:Offset|Limit) must be /,
    // run_shell_command's `directory`: outside the workspace, or not there (bash cannot start).
    /^Directory '[^'\n]*' is not within any of the registered workspace directories/,
    /^spawn \S+ E[A-Z]+$/,
  ],
  agentStubs: [
    /^\[File .* unchanged since last read in this session/,
    // Its placeholder for a read whose text is blank (an empty file, or one of blank lines, which
    // it trims): not the file's line 1, and not that the file is empty.
    /^\(read_file completed with no output\)$/,
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
  // Qwen Code 0.24.4's compression prompt, its last user message.
  summarising: [
    /^You are the component that summarizes a conversation when its context window is about to overflow\./,
  ],
})
