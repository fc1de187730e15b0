import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { Spiller, SpillwayError, Store, defaultStore } from 'spillway'
import { facts, logText, tempStore } from './helpers.mjs'

const lines = (text) => text.split(/(?<=\n)/)

test('under budget the text passes verbatim and nothing is stored', async () => {
  const s = new Spiller({ store: tempStore() })
  const o = await s.apply('short output\n')
  assert.equal(o.spilled, false)
  assert.equal(o.content, 'short output\n')
  assert.equal(o.spill, undefined)
  assert.equal((await s.store.stats()).objects, 0)
})

test('over budget: line-aware head and tail, the error kept, the whole stored exactly', async () => {
  const text = logText(20_000, 19_999)
  const s = new Spiller({ store: tempStore(), maxInlineBytes: '8KiB' })
  const o = await s.apply(text)
  assert.ok(o.spilled)
  assert.ok(Buffer.byteLength(o.content) <= 8192)
  assert.ok(o.content.includes('error[E0308]: mismatched types at line 19999'))
  const bytes = Buffer.from(o.content)
  assert.ok(text.startsWith(bytes.subarray(0, o.headBytes).toString()))
  assert.ok(text.endsWith(bytes.subarray(bytes.length - o.tailBytes).toString()))
  assert.deepEqual(await s.store.read(o.spill.id), Buffer.from(text))
  const [first, last] = o.omittedRange
  const omitted = lines(text).slice(first - 1, last).join('')
  assert.equal((await s.store.read(o.spill.id.slice(0, 23), { lines: `${first}:${last}` })).toString(), omitted)
  assert.ok(o.content.includes(o.spill.id.slice(0, 23)))
  assert.equal(await s.store.resolve(o.spill.id.slice(0, 23)), o.spill.id)
})

test('a string, a Buffer and a Uint8Array give the same outcome', async () => {
  const text = logText(5000)
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 4096 })
  const want = facts(await s.apply(text))
  const buf = Buffer.from(text)
  assert.deepEqual(facts(await s.apply(buf)), want)
  const u8 = new Uint8Array(buf.length + 10).subarray(5, 5 + buf.length)
  u8.set(buf)
  assert.deepEqual(facts(await s.apply(u8)), want)
})

test('any chunking through a stage gives the outcome of one apply', async () => {
  const data = Buffer.concat([Buffer.from(logText(4000, 1234)), Buffer.from('€'.repeat(100))])
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 3000, maxInlineLines: 40 })
  const whole = facts(await s.apply(data))
  let seed = 7
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed }
  for (let round = 0; round < 4; round++) {
    const stage = s.stage()
    for (let i = 0; i < data.length;) {
      const n = [1, 2, 3, 7, 64, 4096, 65536][rand() % 7]
      stage.write(data.subarray(i, i + n))
      i += n
    }
    assert.deepEqual(facts(await stage.finish()), whole)
    assert.equal(stage.bytesWritten, 0, 'a finished stage holds nothing')
  }
})

test('a child process pipes into a stage', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 4096 })
  const stage = s.stage()
  const child = spawn('seq', ['1', '200000'])
  child.stdout.pipe(stage)
  const o = await stage.finish()
  assert.equal(o.totalLines, 200_000)
  assert.ok(o.content.endsWith('199999\n200000\n'))
  assert.equal((await s.store.read(o.spill.id, { lines: '100000:100000' })).toString(), '100000\n')
  assert.equal(stage.outcome, o)
  // stream.pipeline too.
  const again = s.stage()
  await pipeline(spawn('seq', ['1', '200000']).stdout, again)
  assert.deepEqual(facts(again.outcome), facts(o))
})

test('a destroyed stage stores nothing; a finished one takes no more writes', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 1024 })
  const stage = s.stage()
  stage.on('error', () => {})
  stage.write(Buffer.from('x\n'.repeat(100_000)))
  stage.destroy(new Error('tool crashed'))
  await assert.rejects(stage.finish(), /tool crashed/)
  const stats = await s.store.stats()
  assert.equal(stats.objects, 0)
  assert.equal(stats.tempFiles, 0)
  const done = s.stage()
  await done.finish()
  done.on('error', () => {})
  await assert.rejects(new Promise((resolve, reject) => done.write('more', (e) => (e ? reject(e) : resolve()))), /write after end/)
})

test('memory stays bounded for any length of input', () => {
  // 512 MiB through a 32 KiB budget in a fresh process: its peak RSS grows
  // far less than the input.
  const script = `
    import { Spiller } from 'spillway'
    import { Readable } from 'node:stream'
    import { pipeline } from 'node:stream/promises'
    const s = new Spiller({ store: ${JSON.stringify(tempStore())}, maxSpillBytes: '16MiB' })
    const chunk = Buffer.from(Array.from({ length: 40000 }, (_, i) => 'line ' + i + ' of a long build log\\n').join(''))
    const before = process.resourceUsage().maxRSS
    let left = 512 << 20
    const source = new Readable({ read() { if (left <= 0) return this.push(null); left -= chunk.length; this.push(chunk) } })
    const stage = s.stage()
    await pipeline(source, stage)
    const o = stage.outcome
    if (!o.spill.truncated || o.totalBytes < 512 << 20) throw new Error('unexpected outcome')
    console.log(process.resourceUsage().maxRSS - before)
  `
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: path.resolve(import.meta.dirname ?? '.', '..') })
  assert.equal(r.status, 0, r.stderr)
  const grownKiB = Number(r.stdout.trim())
  assert.ok(grownKiB < 96 * 1024, `peak RSS grew by ${grownKiB} KiB for a 512 MiB input`)
})

test('hashing, compression and fsync stay off the event loop', async () => {
  const data = Buffer.from(logText(1_600_000)).subarray(0, 64 << 20)
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 50_000 })
  const h = monitorEventLoopDelay({ resolution: 1 })
  h.enable()
  const t0 = performance.now()
  const o = await s.apply(data)
  const took = performance.now() - t0
  h.disable()
  assert.ok(o.spilled)
  const worstMs = h.max / 1e6
  assert.ok(worstMs < took / 4, `the event loop stalled ${worstMs.toFixed(1)} ms during a ${took.toFixed(1)} ms apply`)
})

test('many stages run at once', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 4096 })
  const texts = Array.from({ length: 16 }, (_, i) => logText(3000, i + 1))
  const outs = await Promise.all(texts.map((t) => s.apply(t)))
  for (const [i, o] of outs.entries()) assert.deepEqual(await s.store.read(o.spill.id), Buffer.from(texts[i]))
  assert.equal((await s.store.stats()).objects, 16)
})

test('the same output is stored once', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 2048 })
  const a = await s.apply(logText(4000))
  const b = await s.apply(logText(4000))
  assert.equal(a.spill.id, b.spill.id)
  assert.equal(a.spill.dedup, false)
  assert.equal(b.spill.dedup, true)
})

test('policy errors have stable codes and the Rust message', () => {
  const cases = [
    [{ maxInlineBytes: 10 }, 'ERR_SPILLWAY_BUDGET_TOO_SMALL', /use at least/],
    [{ maxInlineBytes: '65MiB' }, 'ERR_SPILLWAY_BUDGET_TOO_LARGE', /above the limit/],
    [{ maxInlineLines: 0 }, 'ERR_SPILLWAY_LINES_TOO_SMALL', /line/],
    [{ headPercent: 101 }, 'ERR_SPILLWAY_HEAD_PERCENT', /between 0 and 100/],
    [{ maxSpillBytes: 0 }, 'ERR_SPILLWAY_MAX_SPILL_BYTES', /at least 1 byte/],
    [{ level: 40 }, 'ERR_SPILLWAY_LEVEL', /outside/],
    [{ compression: 'none', level: 3 }, 'ERR_SPILLWAY_LEVEL', /compression is none/],
    [{ notice: { omitted: '{nope}' } }, 'ERR_SPILLWAY_NOTICE_TEMPLATE', /nope/],
    [{ compression: 'lz4' }, 'ERR_SPILLWAY_POLICY', /lz4/],
    [{ maxInline: 5 }, 'ERR_SPILLWAY_POLICY', /unknown option `maxInline`/],
    [{ maxInlineBytes: 1.5 }, 'ERR_SPILLWAY_POLICY', /whole number/],
    [{ notice: { footer: 'x' } }, 'ERR_SPILLWAY_POLICY', /footer/],
  ]
  const store = tempStore()
  for (const [options, code, message] of cases) {
    assert.throws(() => new Spiller({ store, ...options }), (e) => {
      assert.ok(e instanceof SpillwayError && e instanceof Error, String(e))
      assert.equal(e.code, code, `${JSON.stringify(options)}: ${e.message}`)
      assert.match(e.message, message)
      return true
    })
  }
})

function breakStore(store) {
  // Something not a directory where the store keeps its temp files: every
  // write fails, as on a broken disk (root ignores permissions).
  mkdirSync(path.join(store, 'v1'), { recursive: true })
  writeFileSync(path.join(store, 'v1', 'tmp'), 'not a directory')
}

test('a failed save still gives a bounded preview, or in fail mode an error that hands it back', async () => {
  const store = tempStore()
  const text = logText(5000, 4999)
  const preview = new Spiller({ store, maxInlineBytes: 2048 })
  const failing = new Spiller({ store, maxInlineBytes: 2048, onStoreError: 'fail' })
  breakStore(store)
  const o = await preview.apply(text)
  assert.ok(o.spilled && o.spill === undefined && o.storeError && o.storeErrorKind)
  assert.ok(Buffer.byteLength(o.content) <= 2048)
  assert.match(o.content, /could not be saved/)
  assert.match(o.content, /line 4999/)
  await assert.rejects(failing.apply(text), (e) => {
    assert.equal(e.code, 'ERR_SPILLWAY_STORE')
    assert.ok(e.kind)
    assert.ok(Buffer.byteLength(e.outcome.content) <= 2048)
    return true
  })
  const stage = failing.stage()
  stage.on('error', () => {})
  stage.write(text)
  await assert.rejects(stage.finish(), (e) => e.code === 'ERR_SPILLWAY_STORE' && e.outcome.spilled)
})

test('store reads, ranges and ids', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: 2048 })
  const text = logText(5000)
  const o = await s.apply(text)
  await assert.rejects(s.store.read('blake3:' + '0'.repeat(64)), (e) => e.code === 'ERR_SPILLWAY_STORE' && e.kind === 'not_found')
  await assert.rejects(s.store.read('../../etc/passwd'), (e) => e.code === 'ERR_SPILLWAY_ID')
  await assert.rejects(s.store.read(o.spill.id, { lines: '9:3' }), (e) => e.code === 'ERR_SPILLWAY_RANGE')
  await assert.rejects(s.store.read(o.spill.id, { lines: '1:2', bytes: '0:1' }), (e) => e.code === 'ERR_SPILLWAY_RANGE')
  await assert.rejects(s.store.read(o.spill.id, { line: '1:2' }), (e) => e.code === 'ERR_SPILLWAY_RANGE')
  assert.equal((await s.store.read(o.spill.id, { bytes: '0:9' })).toString(), text.slice(0, 9))
  assert.equal((await s.store.read(o.spill.id, { lines: '2:2' })).toString(), lines(text)[1])
})

test('a read quarantines a corrupt object; gc keeps what a session references', async () => {
  const root = tempStore()
  const s = new Spiller({ store: root, maxInlineBytes: 1024, compression: 'none' })
  const good = (await s.apply(logText(3000))).spill
  const bad = (await s.apply(logText(3001))).spill
  chmodSync(bad.path, 0o600)
  const data = readFileSync(bad.path)
  data[100] ^= 1
  writeFileSync(bad.path, data)
  await assert.rejects(s.store.read(bad.id), (e) => e.kind === 'corrupt')
  // The read set it aside: verify finds nothing left to move.
  assert.equal(existsSync(bad.path), false)
  const report = await s.store.verify()
  assert.equal(report.ok, 1)
  assert.deepEqual(report.corrupt, [])
  assert.equal((await s.store.stats()).quarantined, 1)
  const kept = await s.apply(logText(4000))
  const session = path.join(path.dirname(root), 'session.jsonl')
  writeFileSync(session, JSON.stringify({ content: kept.content }) + '\n')
  const dry = await s.store.gc({ maxBytes: 0, keepReferencedBy: [session], dryRun: true })
  assert.deepEqual(dry.removed.map((o) => o.id), [good.id])
  const gc = await s.store.gc({ maxBytes: '0B', keepReferencedBy: [session] })
  assert.equal(gc.keptReferenced, 1)
  assert.deepEqual((await s.store.list()).map((o) => o.id), [kept.spill.id])
  await assert.rejects(s.store.gc({ maxAge: 'soon' }), (e) => e.code === 'ERR_SPILLWAY_INVALID_ARG')
  await assert.rejects(s.store.gc({ maxAge: -1 }), (e) => e.code === 'ERR_SPILLWAY_INVALID_ARG')
})

test('the store is private; put stores once; a Store opens by path', async () => {
  const root = tempStore()
  const store = new Store(root)
  const a = await store.put('hello\n'.repeat(1000), { compression: 'none' })
  const b = await store.put(Buffer.from('hello\n'.repeat(1000)), { compression: 'none' })
  assert.equal(a.id, b.id)
  assert.equal(b.dedup, true)
  for (const p of [root, path.join(root, 'v1'), a.path]) assert.equal(statSync(p).mode & 0o077, 0, p)
  assert.equal(readFileSync(a.path, 'utf8'), 'hello\n'.repeat(1000))
  const s = new Spiller({ store })
  assert.equal(s.store.root, store.root)
})

test('the default store follows the environment as the CLI does', () => {
  const saved = { ...process.env }
  try {
    delete process.env.SPILLWAY_STORE
    process.env.XDG_CACHE_HOME = '/tmp/xdg-cache'
    assert.equal(defaultStore(), '/tmp/xdg-cache/spillway')
    process.env.SPILLWAY_STORE = '/tmp/elsewhere'
    assert.equal(defaultStore(), '/tmp/elsewhere')
  } finally {
    process.env = saved
  }
})
