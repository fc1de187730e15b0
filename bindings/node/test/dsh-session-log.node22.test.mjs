// A DeepSeek Harness session log, written by DSH's own published packages
// (its session store and its JSONL persistence backend, uncompressed),
// with a Code Mode call run by DSH's worker-thread runtime through
// spillway's plugin: `spillway view` shows it as one card with its nested
// call inside, and the nested call's notice expands from the store.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'

import { Context } from '@deepseek-ai/cordis'
import { CallId, createToolResultMessage } from '@deepseek-ai/dsh-llm'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import JsonlSessionPersistence from '@deepseek-ai/dsh-session-persistence-jsonl'
import SystemPrompt from '@deepseek-ai/dsh-system-prompt'
import ToolRuntime, { defineContentToolFixture } from '@deepseek-ai/dsh-tools'
import { WorkerThreadCodeRuntime } from '@deepseek-ai/dsh-code-runtime-worker-thread'

import * as SpillPolicy from 'spillway/dsh'
import { SpillwaySpillStore } from 'spillway/dsh'
import { Store } from 'spillway'
import { cli, logText, tempDir } from './helpers.mjs'

/** One DSH turn: a run_code call whose nested call's output is spilled. */
async function writeSession (dir) {
  const root = path.join(dir, 'store')
  const ctx = new Context()
  await ctx.plugin(SessionStore)
  await ctx.plugin(JsonlSessionPersistence, { root: path.join(dir, 'sessions'), compression: 'none', packChunks: false })
  await ctx.plugin(SystemPrompt)
  await ctx.plugin(ToolRuntime, { mode: 'code' })
  await ctx.plugin(SpillwaySpillStore, { root })
  await ctx.plugin(SpillPolicy, { maxInlineBytes: 2000 })
  await ctx.plugin(WorkerThreadCodeRuntime, {})
  ctx.logger.warn = () => {}
  ctx.tools.register(defineContentToolFixture({
    name: 'huge_read', description: 'huge_read', parameters: {},
    async execute () { return [{ type: 'text', text: logText(5000, 4990) }] }
  }))
  const session = ctx.sessions.create(SessionId('viewed'), { meta: { cwd: '/workspace' } })
  const callId = CallId('call-1')
  const args = { code: 'const b = await tools.huge_read({}); return b[0].text.length', description: 'read the log' }
  session.append('turn/start', { turn: 1 })
  session.append('step/start', { turn: 1, step: 1 })
  session.append('tool/call', { turn: 1, step: 1, callId, name: 'run_code', arguments: JSON.stringify(args) })
  const result = await ctx.tools.execute({ signal: new AbortController().signal, callId, name: 'run_code', arguments: args, agent: { session } })
  session.append('tool/result', { turn: 1, step: 1, message: createToolResultMessage({ callId, content: result.content, isError: result.isError }) }, { surfaceOp: 'append' })
  session.append('step/end', { turn: 1, step: 1 })
  session.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  await ctx.sessions.flush(session)
  const found = []
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name)
      if (e.isDirectory()) walk(p)
      else if (e.name.endsWith('.jsonl')) found.push(p)
    }
  }
  walk(path.join(dir, 'sessions'))
  assert.equal(found.length, 1, 'DSH wrote one session log')
  return { log: found[0], root }
}

/** `spillway view`, its address, and a way to stop it. */
async function view (store, log) {
  const child = spawn(cli(), ['--store', store, 'view', log], { stdio: ['ignore', 'pipe', 'inherit'] })
  const first = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout })
    lines.once('line', resolve)
    child.once('exit', (code) => reject(new Error(`spillway view exited with ${code}`)))
  })
  const url = new URL(first.replace('spillway view: ', ''))
  const get = async (p) => {
    const r = await fetch(new URL(p, url.origin), { headers: { authorization: `Bearer ${url.searchParams.get('token')}` } })
    return { status: r.status, body: await r.json() }
  }
  const stop = () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGINT') })
  return { get, stop }
}

test('spillway view reads a session log DSH\'s packages wrote: one card, its nested call inside, the notice expandable', async () => {
  const dir = tempDir('spillway-dsh-log-')
  const { log, root } = await writeSession(dir)
  const v = await view(root, log)
  try {
    const sessions = await v.get('/api/sessions')
    assert.equal(sessions.body.sessions[0].dialect, 'deepseek-harness')
    assert.equal(sessions.body.sessions[0].badLines, 0)
    const { body } = await v.get('/api/cards?session=0')
    assert.equal(body.total, 1)
    const card = body.cards[0]
    assert.equal(card.callId, 'call-1')
    assert.equal(card.title, 'read the log')
    assert.equal(card.rawInput, 'const b = await tools.huge_read({}); return b[0].text.length')
    assert.equal(card.pending, false)
    assert.equal(card.content[0].text, String(Buffer.byteLength(logText(5000, 4990))))
    assert.equal(card.dispatches.length, 1)
    const d = card.dispatches[0]
    assert.equal(d.subCallId, 'call-1:code:1')
    assert.equal(d.tool, 'huge_read')
    assert.equal(d.pending, false)
    // The nested call's notice names the stored object (by its file) and
    // the omitted lines; expanded, it is those lines of the object.
    assert.equal(d.notices.length, 1)
    const n = d.notices[0]
    const [obj] = await new Store(root).list()
    assert.equal(n.id, obj.id)
    const page = await v.get(`/api/object/${n.id}?lines=${n.lines}`)
    assert.equal(page.status, 200)
    const [a, b] = n.lines.split(':').map(Number)
    const want = logText(5000, 4990).split('\n').slice(a - 1, b).join('\n') + '\n'
    assert.equal(page.body.text, want)
  } finally {
    await v.stop()
  }
})
