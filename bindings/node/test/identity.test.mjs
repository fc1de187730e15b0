// The same input and policy give byte for byte the same outcome (content,
// id, every field) from Node, the CLI and the Rust library.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import path from 'node:path'

import { Spiller } from 'spillway'
import { camel, cli, facts, logText, rustApply, tempStore } from './helpers.mjs'

function* inputs() {
  let seed = 7
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed }
  yield ['empty', Buffer.alloc(0)]
  yield ['small', Buffer.from('hello\nworld\n')]
  yield ['no-final-newline', Buffer.from('a'.repeat(5000))]
  yield ['log-with-error-in-tail', Buffer.from(logText(3000, 2999))]
  yield ['multibyte', Buffer.from('жёлтый 🦀 ✓\n'.repeat(2000))]
  yield ['invalid-utf8', Buffer.concat([Buffer.from('ok\n'.repeat(500)), Buffer.from([0xff, 0xfe, 0x20, 0xc3, 0x0a]), Buffer.from('tail\n'.repeat(500))])]
  yield ['binary', Buffer.from(Array.from({ length: 20000 }, () => rand() % 256))]
  yield ['one-long-line', Buffer.from('x'.repeat(100_000))]
  yield ['crlf', Buffer.from('line\r\n'.repeat(4000))]
}

// Node options, and the same policy as config keys (for the CLI's config
// file and the Rust example).
const POLICIES = {
  default: [{}, {}],
  'small-zstd3': [{ maxInlineBytes: '2KiB', level: 3, headPercent: 50 }, { max_inline_bytes: '2KiB', zstd_level: 3, head_percent: 50 }],
  'lines-raw': [{ maxInlineBytes: 4096, maxInlineLines: 20, compression: 'none' }, { max_inline_bytes: 4096, max_inline_lines: 20, compression: 'none' }],
  'cap-and-notice': [
    { maxInlineBytes: 1500, maxSpillBytes: 10_000, notice: { omitted: '[cut {omitted_lines} lines of {total_lines}. {location}]' } },
    { max_inline_bytes: 1500, max_spill_bytes: 10_000, notice: { omitted: '[cut {omitted_lines} lines of {total_lines}. {location}]' } },
  ],
}

function toml(config) {
  const value = (v) => (typeof v === 'string' ? JSON.stringify(v) : String(v))
  const out = ['[policy]']
  for (const [k, v] of Object.entries(config)) if (k !== 'notice') out.push(`${k} = ${value(v)}`)
  if (config.notice) {
    out.push('[policy.notice]')
    for (const [k, v] of Object.entries(config.notice)) out.push(`${k} = ${value(v)}`)
  }
  return out.join('\n') + '\n'
}

for (const [name, [options, config]] of Object.entries(POLICIES)) {
  test(`Node, the CLI and Rust agree: ${name}`, async () => {
    const store = tempStore()
    const s = new Spiller({ store, ...options })
    const file = path.join(path.dirname(store), 'config.toml')
    writeFileSync(file, toml(config))
    const env = { ...process.env, HOME: path.dirname(store) }
    delete env.SPILLWAY_STORE
    for (const [label, data] of inputs()) {
      const ours = facts(await s.apply(data))
      const byCli = spawnSync(cli(), ['--store', store, '--config', file, 'apply', '--json'], { input: data, env })
      assert.equal(byCli.status, 0, byCli.stderr?.toString())
      const byRust = spawnSync(rustApply(), [store, JSON.stringify(config)], { input: data, env })
      assert.equal(byRust.status, 0, byRust.stderr?.toString())
      for (const other of [byCli, byRust]) {
        const theirs = camel(JSON.parse(other.stdout))
        // The Node object leaves absent values out; JSON says null.
        for (const [k, v] of Object.entries(theirs)) if (v === null) delete theirs[k]
        assert.deepEqual(ours, facts(theirs), label)
      }
    }
  })
}
