// The integrations page's Node.js section runs as written.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import path from 'node:path'

import { REPO, tempDir } from './helpers.mjs'

test('the docs\' Node.js examples run as written', () => {
  const readme = readFileSync(path.join(REPO, 'docs', 'integrations.md'), 'utf8')
  const section = readme.split('\n## Node.js\n')[1].split('\n## ')[0]
  const blocks = [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  assert.ok(blocks.length >= 2)
  for (const [i, code] of blocks.entries()) {
    // Inside the package, so that `spillway` resolves to it.
    const file = path.join(REPO, 'bindings', 'node', 'test', `_readme_${i}.mjs`)
    writeFileSync(file, code)
    try {
      // The folders an example makes in the temporary folder go in one
      // of its own, removed with the test's.
      const env = { ...process.env, TMPDIR: tempDir('spillway-readme-') }
      const r = spawnSync(process.execPath, [file], { encoding: 'utf8', env })
      assert.equal(r.status, 0, r.stderr)
      assert.ok(!r.stdout.includes('false'), `every check the example prints is true:\n${r.stdout}`)
    } finally {
      rmSync(file, { force: true })
    }
  }
})
