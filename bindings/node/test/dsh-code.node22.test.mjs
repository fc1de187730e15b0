// Code Mode through spillway's DeepSeek Harness plugin: DSH's worker-thread
// code runtime (Node 22) runs real programs whose nested tool calls go
// through DSH's dispatch log.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { Context } from '@deepseek-ai/cordis'
import { CallId } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime, { defineContentToolFixture } from '@deepseek-ai/dsh-tools'
import { WorkerThreadCodeRuntime } from '@deepseek-ai/dsh-code-runtime-worker-thread'

import * as SpillPolicy from 'spillway/dsh'
import { SpillwaySpillStore } from 'spillway/dsh'
import { Store } from 'spillway'
import { logText, tempStore } from './helpers.mjs'

const signal = new AbortController().signal
const bytes = (s) => Buffer.byteLength(s, 'utf8')
const textOf = (content) => content.filter((b) => b.type === 'text').map((b) => b.text).join('')

function textTool(name, text) {
  return defineContentToolFixture({ name, description: name, parameters: {}, async execute() { return [{ type: 'text', text }] } })
}

async function runCode(program, maxInlineBytes, { breakStore = false, runtime = {} } = {}) {
  const root = tempStore()
  const ctx = new Context()
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime, { mode: 'code' })
  await ctx.plugin(SpillwaySpillStore, { root })
  await ctx.plugin(SpillPolicy, { maxInlineBytes })
  await ctx.plugin(WorkerThreadCodeRuntime, runtime)
  ctx.logger.warn = () => {}
  if (breakStore) {
    mkdirSync(path.join(root, 'v1'), { recursive: true })
    writeFileSync(path.join(root, 'v1', 'tmp'), 'not a directory')
  }
  ctx.tools.register(textTool('huge_read', logText(5000, 4990)))
  ctx.tools.register(textTool('small_read', 'tiny'))
  const events = []
  const agent = { session: { header: { id: SessionId('code'), cwd: '/workspace' }, append: (type, data) => events.push({ type, data }) } }
  const result = await ctx.tools.execute({ signal, callId: CallId('parent'), name: 'run_code', arguments: { code: program, description: 'test' }, agent })
  return { result, events, store: new Store(root) }
}

test('a nested call\'s durable copy is bounded and stored; the program gets the whole value', async () => {
  const { result, events, store } = await runCode('const b = await tools.huge_read({}); return b[0].text.length', 2000)
  assert.equal(result.isError, false)
  assert.deepEqual(result.value.result, bytes(logText(5000, 4990)))
  const settle = events.find((e) => e.type === 'tool/code-dispatch')
  const logged = textOf(settle.data.content)
  assert.ok(bytes(logged) <= 2000)
  assert.match(logged, /line 4990/, 'the error near the end is kept')
  const p = logged.match(/stored at: (\S+?)\./)[1]
  const [obj] = await store.list()
  assert.equal(obj.path, p)
  assert.deepEqual(await store.read(obj.id), Buffer.from(logText(5000, 4990)))
})

test('a within-cap nested result is logged as it is', async () => {
  const { events, store } = await runCode('return await tools.small_read({})', 2000)
  const settle = events.find((e) => e.type === 'tool/code-dispatch')
  assert.deepEqual(settle.data.content, [{ type: 'text', text: 'tiny' }])
  assert.equal((await store.stats()).objects, 0)
})

test('the outer run_code result is bounded too', async () => {
  const { result } = await runCode('const b = await tools.huge_read({}); return b[0].text', 2000)
  assert.ok(bytes(textOf(result.content)) <= 2000)
  assert.match(textOf(result.content), /omitted lines/)
})

test('with the store broken, the durable copy is still bounded and says so', async () => {
  const { result, events } = await runCode('return (await tools.huge_read({}))[0].text.length', 2000, { breakStore: true })
  assert.equal(result.isError, false)
  const logged = textOf(events.find((e) => e.type === 'tool/code-dispatch').data.content)
  assert.ok(bytes(logged) <= 2000)
  assert.match(logged, /could not be saved/)
})
