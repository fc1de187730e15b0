// `npm run bench`: DeepSeek Harness's own spill-policy listener with its
// local spill store, against spillway's plugin on its store, on the same
// texts already in memory (a generated build log), a 50,000-byte cap, one
// run. Each case runs in a fresh process (so peak memory is its own),
// through a real cordis context and DSH's tool runtime (ctx.tools.execute).
// Each execution gets a different text, so no run is a dedup hit.
// spillway writes durably (fsync); DSH's local store does not fsync.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const CAP = 50_000
const SIZES = { '1 MiB': 1 << 20, '64 MiB': 64 << 20 }

function logText(size) {
  const parts = []
  let n = 0
  for (let i = 0; n < size; i++) {
    const line = i % 50 ? `   Compiling crate-${i} v0.${i % 97}.${i % 13} (registry)\n` : `warning: unused variable \`x${i}\` at src/lib.rs:${i}:9\n`
    parts.push(line)
    n += line.length
  }
  return parts.join('').slice(0, size)
}

async function one(mode, size, runs) {
  if (mode === 'encode') {
    // The floor for anything that stores a JavaScript string: encoding it
    // to UTF-8 once.
    const base = logText(size)
    const texts = Array.from({ length: runs }, (_, i) => Buffer.from(base + `run ${i}\n`, 'latin1').toString('latin1'))
    const times = texts.map((t) => { const t0 = performance.now(); Buffer.from(t, 'utf8'); return performance.now() - t0 })
    times.sort((a, b) => a - b)
    return { median: times[Math.floor(times.length / 2)], addedMiB: 0 }
  }
  const { Context } = await import('@deepseek-ai/cordis')
  const SystemPrompt = (await import('@deepseek-ai/dsh-system-prompt')).default
  const ToolRuntime = (await import('@deepseek-ai/dsh-tools')).default
  const { defineContentToolFixture } = await import('@deepseek-ai/dsh-tools')
  const root = mkdtempSync(path.join(tmpdir(), 'spillway-bench-'))
  const ctx = new Context()
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime)
  if (mode === 'dsh') {
    await ctx.plugin((await import('@deepseek-ai/dsh-spill-local')).default, { root })
    await ctx.plugin(await import('@deepseek-ai/dsh-spill-policy'), { maxInlineBytes: CAP })
  } else {
    const dsh = await import('spillway/dsh')
    const durability = mode === 'spillway-relaxed' ? 'relaxed' : 'durable'
    await ctx.plugin(dsh.SpillwaySpillStore, { root, durability })
    await ctx.plugin(dsh, { maxInlineBytes: CAP, durability })
  }
  const base = logText(size)
  let current = ''
  ctx.tools.register(defineContentToolFixture({ name: 'build', description: 'build', parameters: {}, async execute() { return [{ type: 'text', text: current }] } }))
  const agent = { session: { header: { id: 'bench' } } }
  const signal = new AbortController().signal
  // Every run's text, flat in memory before the baseline is taken (as a
  // tool's output is when the policy sees it).
  const flat = (s) => Buffer.from(s, 'latin1').toString('latin1')
  const texts = Array.from({ length: runs }, (_, i) => flat(base + `run ${i}\n`))
  // One warm-up call, then the baseline memory.
  current = flat(base + 'warm-up\n')
  await ctx.tools.execute({ callId: 'w', name: 'build', arguments: {}, agent, signal })
  current = ''
  globalThis.gc?.()
  globalThis.gc?.()
  const rssBefore = process.memoryUsage().rss
  let peak = rssBefore
  const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 2)
  const times = []
  for (let i = 0; i < runs; i++) {
    current = texts[i]
    const t0 = performance.now()
    const r = await ctx.tools.execute({ callId: `c${i}`, name: 'build', arguments: {}, agent, signal })
    times.push(performance.now() - t0)
    if (Buffer.byteLength(r.content[0].text) > CAP) throw new Error(`${mode}: the cap did not hold`)
    peak = Math.max(peak, process.memoryUsage().rss)
  }
  clearInterval(sampler)
  rmSync(root, { recursive: true, force: true })
  times.sort((a, b) => a - b)
  return { median: times[Math.floor(times.length / 2)], addedMiB: (peak - rssBefore) / 2 ** 20 }
}

const args = process.argv.slice(2)
if (args[0] === '--one') {
  console.log(JSON.stringify(await one(args[1], Number(args[2]), Number(args[3]))))
} else {
  const here = fileURLToPath(import.meta.url)
  const rows = []
  for (const [label, size] of Object.entries(SIZES)) {
    const runs = size > 8 << 20 ? 5 : 9
    const r = {}
    for (const mode of ['dsh', 'spillway', 'spillway-relaxed', 'encode']) {
      const out = spawnSync(process.execPath, ['--expose-gc', here, '--one', mode, String(size), String(runs)], { encoding: 'utf8', cwd: path.dirname(path.dirname(here)) })
      if (out.status !== 0) throw new Error(out.stderr)
      r[mode] = JSON.parse(out.stdout.trim().split('\n').pop())
    }
    rows.push([label, size, r])
  }
  console.log(`node ${process.version}, cap ${CAP} bytes, medians`)
  console.log('')
  console.log('| input | DSH spill-policy + local store (no fsync) | spillway plugin, durable | speed-up | spillway, relaxed (no fsync) | speed-up | UTF-8 encode alone | DSH added memory | spillway added memory |')
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const [label, size, r] of rows) {
    const relaxed = r['spillway-relaxed']
    console.log(`| ${label} | ${r.dsh.median.toFixed(1)} ms | ${r.spillway.median.toFixed(1)} ms | ${(r.dsh.median / r.spillway.median).toFixed(1)}x | ${relaxed.median.toFixed(1)} ms | ${(r.dsh.median / relaxed.median).toFixed(1)}x | ${r.encode.median.toFixed(1)} ms | ${r.dsh.addedMiB.toFixed(0)} MiB | ${r.spillway.addedMiB.toFixed(0)} MiB (input: ${(size / 2 ** 20).toFixed(0)} MiB) |`)
  }
  const [, size, big] = rows[rows.length - 1]
  console.log('')
  console.log(`64 MiB: spillway is ${(big.dsh.median / big.spillway.median).toFixed(1)}x faster (target >= 10x); adds ${big.spillway.addedMiB.toFixed(0)} MiB (target <= the input, ${(size / 2 ** 20).toFixed(0)} MiB)`)
}
