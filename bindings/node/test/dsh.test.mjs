// spillway's DeepSeek Harness plugin against DSH's published packages: a
// real cordis context, DSH's tool runtime, real tools run through
// ctx.tools.execute. The cases follow DSH's own spill-policy tests, then
// the guarantees DSH's policy does not give.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { Context } from '@deepseek-ai/cordis'
import Loader from '@deepseek-ai/cordis-plugin-loader'
import { CallId, createToolResultMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime, { defineContentToolFixture } from '@deepseek-ai/dsh-tools'
import LocalSpillStore from '@deepseek-ai/dsh-spill-local'
import * as DshSpillPolicy from '@deepseek-ai/dsh-spill-policy'

import * as SpillPolicy from 'spillway/dsh'
import { SpillwaySpillStore } from 'spillway/dsh'
import { Store } from 'spillway'
import { logText, tempStore } from './helpers.mjs'

const signal = new AbortController().signal

function textTool(name, text) {
  return defineContentToolFixture({
    name, description: name, parameters: {},
    async execute() { return [{ type: 'text', text }] },
  })
}

function exec(name, session = 's1') {
  return { callId: CallId(`call-${name}`), name, arguments: {}, agent: { session: { header: { id: SessionId(session) } } }, signal }
}

const textOf = (content) => content.filter((b) => b.type === 'text').map((b) => b.text).join('')
const bytes = (s) => Buffer.byteLength(s, 'utf8')

async function setup(config, { policy = SpillPolicy, backend = true, before } = {}) {
  const root = tempStore()
  const ctx = new Context()
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime)
  if (backend) await ctx.plugin(SpillwaySpillStore, { root })
  before?.(ctx)
  await ctx.plugin(policy, config)
  return { ctx, root, store: new Store(root) }
}

/** The object a notice names (by its short id or path), read back whole. */
async function storedFor(store, text) {
  const short = text.match(/blake3:[0-9a-f]{16}/)
  if (short) return store.read(short[0])
  const p = text.match(/stored at: (\S+?)\./)
  return readFileSync(p[1])
}

test('loads like DSH\'s plugin: name, inject, Config, apply, no default export', () => {
  assert.equal('default' in SpillPolicy, false)
  const loader = Object.create(Loader.prototype)
  const unwrapped = loader.unwrapExports(SpillPolicy)
  assert.equal(unwrapped.name, DshSpillPolicy.name)
  assert.deepEqual(unwrapped.inject, DshSpillPolicy.inject)
  assert.ok(unwrapped.Config)
  assert.equal(typeof unwrapped.apply, 'function')
})

test('disabled (no maxInlineBytes) is a no-op', async () => {
  const { ctx, store } = await setup({})
  ctx.tools.register(textTool('big', 'x'.repeat(100_000)))
  const r = await ctx.tools.execute(exec('big'))
  assert.equal(textOf(r.content), 'x'.repeat(100_000))
  assert.equal((await store.stats()).objects, 0)
})

test('config: DSH\'s rules, and a cap too small for any notice fails the load with a clear error', async () => {
  await assert.rejects(setup({ maxInlineBytes: -1 }), /non-negative integer/)
  await assert.rejects(setup({ maxInlineBytes: 1.5 }), /non-negative integer/)
  await assert.rejects(setup({ maxInlineBytes: 4 }), (e) => e.code === 'ERR_SPILLWAY_BUDGET_TOO_SMALL')
  await assert.rejects(setup({ maxInlineBytes: 50_000, headPercent: 140 }), (e) => e.code === 'ERR_SPILLWAY_HEAD_PERCENT')
})

test('oversized text is stored and replaced by a line-aware preview within the cap, the tail error kept', async () => {
  const { ctx, store } = await setup({ maxInlineBytes: 2000 })
  const body = logText(3000, 2999)
  ctx.tools.register(textTool('build', body))
  const r = await ctx.tools.execute(exec('build'))
  assert.equal(r.isError, false)
  const text = textOf(r.content)
  assert.ok(bytes(text) <= 2000)
  assert.ok(text.startsWith('   Compiling crate-1 v0.1.0\n'))
  assert.ok(text.endsWith('error[E0308]: mismatched types at line 2999\n   Compiling crate-3000 v0.90.0\n'))
  // The notice stands in the cut, on its own line, between whole lines.
  const [head, rest] = text.split('\n[spillway: omitted lines ')
  assert.ok(rest, text)
  assert.ok(body.startsWith(head + '\n'))
  const tail = rest.slice(rest.indexOf(']\n') + 2)
  assert.ok(body.endsWith(tail))
  // The stored object reads back exactly.
  assert.deepEqual(await storedFor(store, text), Buffer.from(body))
})

test('small and non-text results pass untouched', async () => {
  const { ctx, store } = await setup({ maxInlineBytes: 1000 })
  ctx.tools.register(textTool('small', 'tiny'))
  ctx.tools.register(defineContentToolFixture({
    name: 'mixed', description: 'mixed', parameters: {},
    async execute() { return [{ type: 'text', text: 'x'.repeat(100_000) }, { type: 'reasoning', text: 'why' }] },
  }))
  assert.equal(textOf((await ctx.tools.execute(exec('small'))).content), 'tiny')
  const mixed = await ctx.tools.execute(exec('mixed'))
  assert.equal(mixed.content.length, 2)
  assert.equal(mixed.content[0].text.length, 100_000)
  assert.equal((await store.stats()).objects, 0)
})

test('read is skipped on the model-facing arm; nested calls are left to the dispatch-log arm', async () => {
  const { ctx, store } = await setup({ maxInlineBytes: 1000 })
  ctx.tools.register(textTool('read', 'x'.repeat(10_000)))
  ctx.tools.register(textTool('nested', 'y'.repeat(10_000)))
  assert.equal(textOf((await ctx.tools.execute(exec('read'))).content).length, 10_000)
  const nested = await ctx.tools.execute({ ...exec('nested'), parent: Symbol('outer') })
  assert.equal(textOf(nested.content).length, 10_000)
  assert.equal((await store.stats()).objects, 0)
})

test('the cap holds when the store fails: DSH\'s policy keeps the whole text, spillway\'s says what happened', async () => {
  const body = logText(5000, 4999)
  // DSH's policy with a failing backend keeps the full text inline.
  const dsh = await setup({ maxInlineBytes: 2000 }, { policy: DshSpillPolicy, backend: false })
  dsh.ctx.logger.warn = () => {}
  dsh.ctx.tools.register(textTool('build', body))
  assert.equal(textOf((await dsh.ctx.tools.execute(exec('build'))).content), body)
  // spillway's, with its store broken on disk, still returns a bounded preview.
  const { ctx, root } = await setup({ maxInlineBytes: 2000 })
  mkdirSync(path.join(root, 'v1'), { recursive: true })
  writeFileSync(path.join(root, 'v1', 'tmp'), 'not a directory')
  const warnings = []
  ctx.logger.warn = (m) => warnings.push(m)
  ctx.tools.register(textTool('build', body))
  const r = await ctx.tools.execute(exec('build'))
  const text = textOf(r.content)
  assert.equal(r.isError, false)
  assert.ok(bytes(text) <= 2000)
  assert.match(text, /could not be saved/)
  assert.match(text, /line 4999/)
  assert.equal(warnings.length, 1)
})

test('bounded without a session owner and without a spill backend', async () => {
  const { ctx, store } = await setup({ maxInlineBytes: 2000, store: tempStore() }, { backend: false })
  ctx.tools.register(textTool('big', logText(3000)))
  const r = await ctx.tools.execute({ signal, callId: CallId('c'), name: 'big', arguments: {} })
  assert.ok(bytes(textOf(r.content)) <= 2000)
  assert.equal((await store.stats()).objects, 0, 'the policy wrote to its own store, not the unused backend')
})

test('composes through next(): a replaced content is bounded; value and block decisions pass', async () => {
  const replaced = await setup({ maxInlineBytes: 2000 }, {
    before: (ctx) => ctx.on('tools/post-execute', async (_exec, _result, next) => {
      await next()
      return { kind: 'accept', content: [{ type: 'text', text: 'first page\n' + 'z\n'.repeat(5000) }] }
    }),
  })
  replaced.ctx.tools.register(textTool('search', 'initial'))
  const r = await replaced.ctx.tools.execute(exec('search'))
  const text = textOf(r.content)
  assert.ok(text.startsWith('first page\n') && bytes(text) <= 2000)

  const blocked = await setup({ maxInlineBytes: 2000 }, {
    before: (ctx) => ctx.on('tools/post-execute', async () => ({ kind: 'block', reason: 'policy says no' })),
  })
  blocked.ctx.tools.register(textTool('big', 'x'.repeat(100_000)))
  const b = await blocked.ctx.tools.execute(exec('big'))
  assert.equal(b.isError, true)
  assert.equal((await blocked.store.stats()).objects, 0)
})

test('the backend: saveText stores each text once, privately, at a path DSH\'s read tool opens', async () => {
  const { ctx, root } = await setup({ maxInlineBytes: 2000 })
  const content = logText(2000)
  const save = (sessionId) => ctx.spillStore.saveText({ owner: { sessionId }, source: { toolName: 't', callId: 'c', label: 'result' }, suggestedName: 't.txt', content })
  const a = await save('s1')
  const b = await save('s2')
  assert.equal(a.locator, b.locator, 'the same text is one object, whatever session saved it')
  assert.equal(a.bytes, bytes(content))
  assert.equal(readFileSync(a.locator, 'utf8'), content)
  assert.equal(statSync(a.locator).mode & 0o077, 0)
  assert.ok(a.locator.startsWith(root))
  assert.match(a.retrievalHint, /read with offset\/limit/)
})

test('one record: the model-facing content is what the durable tool/result holds, and what a card shows', async () => {
  const { ctx, store } = await setup({ maxInlineBytes: 2000 })
  const body = logText(4000)
  ctx.tools.register(textTool('build', body))
  const r = await ctx.tools.execute(exec('build'))
  // What the agent appends as the durable tool/result, built by DSH's own helper.
  const message = createToolResultMessage({ callId: CallId('call-build'), content: r.content, isError: r.isError })
  const durable = JSON.parse(JSON.stringify(message))
  const card = durable.content[0].content
  assert.deepEqual(card, r.content)
  assert.ok(bytes(textOf(card)) <= 2000)
  assert.deepEqual(await storedFor(store, textOf(card)), Buffer.from(body))
})

test('DSH\'s own policy on the same input cuts bytes in half and loses the line structure', async () => {
  // The contrast the integrations page states, measured on DSH's published code.
  const body = logText(3000, 2999)
  const dsh = await setup({ maxInlineBytes: 2000 }, { policy: DshSpillPolicy, backend: false, before: async () => {} })
  await dsh.ctx.plugin(LocalSpillStore, { root: tempStore() })
  dsh.ctx.tools.register(textTool('build', body))
  const theirs = textOf((await dsh.ctx.tools.execute(exec('build'))).content)
  const ours = await setup({ maxInlineBytes: 2000 })
  ours.ctx.tools.register(textTool('build', body))
  const mine = textOf((await ours.ctx.tools.execute(exec('build'))).content)
  const wholeLines = (t) => t.split('\n').filter((l) => l && !l.startsWith('[spillway') && !l.startsWith('(Omitted')).every((l) => body.includes(l + '\n'))
  assert.equal(wholeLines(mine), true)
  assert.equal(wholeLines(theirs), false)
  assert.ok(mine.includes('line 2999'))
})

test('a level alone asks for zstd; a level with compression none is refused', () => {
  const store = tempStore()
  const zstd = SpillPolicy.spillerFor({ maxInlineBytes: 4096, store, level: 7 }, undefined)
  assert.equal(zstd.policy.compression, 'zstd')
  assert.equal(zstd.policy.level, 7)
  const plain = SpillPolicy.spillerFor({ maxInlineBytes: 4096, store }, undefined)
  assert.equal(plain.policy.compression, 'none')
  assert.throws(
    () => SpillPolicy.spillerFor({ maxInlineBytes: 4096, store, compression: 'none', level: 7 }, undefined),
    (e) => e.code !== undefined && /level/i.test(e.message),
  )
})
