import { defineProfile } from '../define-profile.js'

/** opencode (and its Kilo CLI fork): research/agents.md §2, and test/fixtures/agents/opencode. */
export const opencode = defineProfile({
  name: 'opencode',
  tools: [
    {
      kind: 'read',
      names: ['read'],
      path: ['filePath'],
      range: [{ offset: 'offset', limit: 'limit', base: 1 }],
    },
    {
      kind: 'edit',
      names: ['edit'],
      path: ['filePath'],
      edit: [{ old: 'oldString', new: 'newString', all: 'replaceAll' }],
    },
    {
      kind: 'edit',
      names: ['multiedit'],
      path: ['filePath'],
      edit: [{ list: 'edits', old: 'oldString', new: 'newString', all: 'replaceAll' }],
    },
    { kind: 'write', names: ['write'], path: ['filePath'], content: ['content'] },
    { kind: 'patch', names: ['apply_patch'], patch: ['patchText'] },
    { kind: 'list', names: ['list'] },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep'] },
    // The first rule named `bash` decides for every agent: Crush's says `working_dir`.
    { kind: 'shell', names: ['bash'], command: ['command'], dir: ['workdir', 'working_dir'] },
  ],
  envelopes: [
    // 2026: <path>/<type>/<content>, a footer with the file's length or the range shown.
    {
      pattern:
        /^<path>[^\n]*<\/path>\n<type>file<\/type>\n<content>\n(?<body>[\s\S]*?)\n\n\((?:End of file - total (?<total>\d+) lines|Showing lines (?<start>\d+)-(?<end>\d+) of (?<of>\d+)\.[^\n]*|[^\n]*)\)\n<\/content>$/,
      // A line past 2,000 characters is cut there (1.18.33; Kilo 7.7.7 alike).
      lineCut: /\.\.\. \(line truncated to \d+ chars\)$/,
    },
    { pattern: /^<path>[^\n]*<\/path>\n<type>directory<\/type>\n<entries>\n/, kind: 'list' },
    // Until early 2026: <file>, lines numbered 00001|.
    {
      pattern:
        /^<file>\n(?<body>[\s\S]*?)\n\n\((?:End of file - total (?<total>\d+) lines|[^\n]*)\)\n<\/file>$/,
    },
  ],
  // Its bash tool answers with the output alone. Past 2,000 lines or 50 KB it keeps the output's
  // tail (whole lines, or from the middle of one when its stream buffer dropped the start) under a
  // notice, the whole output saved to a file (1.18.33; Kilo 7.7.7 alike): the lines it shows are
  // not placed by the call. A run that timed out or was aborted ends in `<shell_metadata>`; an
  // empty output is `(no output)`. None of these is a file's lines.
  shellEnvelopes: [
    { any: /^\.\.\.output truncated\.\.\.\n\nFull output saved to: [^\n]*\n\n/ },
    { any: /\n\n<shell_metadata>\n[\s\S]*<\/shell_metadata>$/ },
    { any: /^\(no output\)$/ },
  ],
  success: [
    // Its edit finds the old text loosely when it is not there as given (trimmed lines, white
    // space, indentation, escapes, block anchors): only a replay on the file as read says what.
    { pattern: /^Edit applied successfully\.(?:\n\n(?<note>[\s\S]+))?$/, inexact: true },
    { pattern: /^Wrote file successfully\.(?:\n\n(?<note>[\s\S]+))?$/ },
    {
      pattern:
        /^Success\. Updated the following files:\n(?:[AMD] [^\n]+\n?)+(?:\n(?<note>[\s\S]+))?$/,
    },
  ],
  failures: [
    // A file-system call of the CLI's own that failed (1.18.33, Kilo 7.7.7): a bash `workdir`
    // that is not there (`NotFound: FileSystem.access (DIR)`), a write under a file
    // (`BadResource: FileSystem.writeFile (PATH)`).
    /^\w+: FileSystem\.\w+ \(/,
    /^File not found: /,
    /^Cannot read binary file/,
    /^Offset \d+ is out of range/,
    /^offset must be/,
  ],
  // After a compaction the history opens with the question (1.18.33; Kilo 7.7.7 too): the same
  // words asked later in a conversation are the user's own.
  compaction: [
    { role: 'user', pattern: /^What did we do so far\?$/, summary: 'next', first: true },
  ],
})
