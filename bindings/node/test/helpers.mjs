import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

const made = []
// Each test file runs in a process of its own: what it made goes with it.
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** A fresh directory, removed when the test process exits. */
export function tempDir(prefix = 'spillway-node-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** A fresh directory for a store. */
export function tempStore() {
  return path.join(tempDir(), 'store')
}

/** A workspace binary: the env var names it, else the debug build, built if missing. */
function binary(env, rel, args) {
  if (process.env[env]) return process.env[env]
  const found = path.join(REPO, 'target', 'debug', rel)
  if (!existsSync(found)) {
    const built = spawnSync('cargo', ['build', '-q', ...args], { cwd: REPO, stdio: 'inherit' })
    if (built.status !== 0) throw new Error(`cargo build ${args.join(' ')} failed`)
  }
  return found
}

export const cli = () => binary('SPILLWAY_BIN', 'spillway', ['-p', 'spillway-cli'])
export const rustApply = () => binary('SPILLWAY_APPLY_JSON', 'examples/apply_json', ['-p', 'spillway-process', '--example', 'apply_json'])

/** A build log of `lines` lines, an error at line `errorAt` if given. */
export function logText(lines, errorAt = -1) {
  let out = ''
  for (let i = 1; i <= lines; i++) {
    out += i === errorAt ? `error[E0308]: mismatched types at line ${i}\n` : `   Compiling crate-${i} v0.${i % 97}.0\n`
  }
  return out
}

/** An outcome less the one fact that depends on what was stored before. */
export function facts(outcome) {
  const o = structuredClone(outcome)
  if (o.spill) o.spill.dedup = null
  return o
}

/** camelCase keys, as the Node outcome has them, of a CLI JSON object. */
export function camel(value) {
  if (Array.isArray(value)) return value.map(camel)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()), camel(v)]))
}
