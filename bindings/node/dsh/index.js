// spillway inside DeepSeek Harness: a spill-policy plugin that replaces
// `@deepseek-ai/dsh-spill-policy` (same shape, same config, same contract),
// and a `SpillStore` backend on spillway's store.
//
//   import * as SpillPolicy from 'spillway/dsh'
//   import { SpillwaySpillStore } from 'spillway/dsh'
//   await ctx.plugin(SpillwaySpillStore, { root: '/var/lib/agent/spill' })
//   await ctx.plugin(SpillPolicy, { maxInlineBytes: 50_000 })
//
// What it keeps of DSH's contract: plain-text results only (a result with
// any non-text block is left alone); `read` skipped on the model-facing arm;
// nested calls skipped there and bounded by the dispatch-log arm; composes
// through `next()`; value replacements and `block` decisions pass through.
// What it changes: the preview is line-aware (30% head, 70% tail, whole
// lines), the notice stands in the cut and says exactly which lines were
// omitted, the full text is stored once by content (BLAKE3, fsynced), and
// the cap holds even when the store fails, when the call has no session,
// and when no backend is loaded: the result is bounded every time.

import z from '@deepseek-ai/schemastery'
import { SpillLocator, SpillStore } from '@deepseek-ai/dsh-spill'

import { Spiller, Store } from '../lib/index.js'

/** Cordis plugin name: the plugin this one replaces. */
export const name = 'spill-policy'
/** The tool registry, whose post-execute and dispatch-log waterfalls it bounds. */
export const inject = ['tools']

const Compression = z.union([z.const('none'), z.const('zstd')])
const Durability = z.union([z.const('durable'), z.const('relaxed')])
const Size = z.union([z.number(), z.string()])

/** DSH's config (`maxInlineBytes`) plus spillway's own options. */
export const Config = z.object({
  maxInlineBytes: z.number(),
  maxInlineLines: z.number(),
  headPercent: z.number(),
  maxSpillBytes: Size,
  compression: Compression,
  level: z.number(),
  durability: Durability,
  store: z.string(),
})

/**
 * The read hint for objects stored uncompressed: DSH's own `read` and grep
 * tools read them by path.
 */
const PATH_HINT = 'Full output stored at: {path}. Use read with offset/limit, or grep this path; the omitted part is {read_unit} {read_range}.'

function flattenPlainText(content) {
  let text = ''
  for (const block of content) {
    if (block.type !== 'text') return undefined
    text += block.text
  }
  return text
}

/** Builds the spiller this plugin applies, from its config and the backend. */
export function spillerFor(config, backend) {
  const { maxInlineBytes, store, notice, ...rest } = config
  const ours = backend instanceof SpillwaySpillStore ? backend : undefined
  // A level alone asks for zstd (as on the command line); a level with
  // `compression: 'none'` is the Spiller's error to report.
  const compression = rest.compression ?? (rest.level !== undefined ? 'zstd' : ours?.compression ?? 'none')
  return new Spiller({
    ...rest,
    maxInlineBytes,
    compression,
    store: store ?? ours?.root,
    notice: notice ?? (compression === 'none' ? { stored: PATH_HINT } : undefined),
    // The cap holds when the store fails: the notice says what happened.
    onStoreError: 'preview',
  })
}

export function apply(ctx, config) {
  const maxInlineBytes = config.maxInlineBytes
  if (maxInlineBytes === undefined) return
  if (!Number.isInteger(maxInlineBytes) || maxInlineBytes < 0) {
    throw new Error(`spill-policy: maxInlineBytes must be a non-negative integer (got ${maxInlineBytes})`)
  }
  // Built now, so a bad option fails the plugin's load, not a tool call.
  const spiller = spillerFor(config, ctx.get('spillStore'))
  const lineCap = config.maxInlineLines !== undefined
  // The terminal render (the default) changes small outputs too (escapes,
  // progress frames, repeats); only the raw render, without a line or token
  // cap, lets a text that fits pass without a look.
  const sizeDecides = config.render === 'raw' && !lineCap && config.maxInlineTokens === undefined

  /** `text` bounded, or undefined when it already fits. */
  async function bound(text, toolName, label) {
    // A UTF-16 unit is 1 to 3 UTF-8 bytes: most texts are sized without a
    // pass over them.
    const surelyFits = text.length * 3 <= maxInlineBytes
    const surelyOver = text.length > maxInlineBytes
    if (sizeDecides && (surelyFits || (!surelyOver && Buffer.byteLength(text, 'utf8') <= maxInlineBytes))) return undefined
    const outcome = await spiller.apply(text)
    // Unchanged content (nothing omitted, nothing rendered) stays as it was.
    if (!outcome.spilled && !outcome.rendered) return undefined
    if (outcome.storeError) {
      ctx.logger.warn(`spill-policy: the full ${label} of ${toolName} could not be stored (${outcome.storeError}); the preview says so`)
    }
    return outcome.content
  }

  ctx.on('tools/post-execute', async (exec, result, next) => {
    const decision = await next()
    if (decision.kind !== 'accept' || Object.hasOwn(decision, 'value') || exec.parent !== undefined || exec.name === 'read') {
      return decision
    }
    const text = flattenPlainText(decision.content ?? result.content)
    if (text === undefined) return decision
    const bounded = await bound(text, exec.name, 'result')
    if (bounded === undefined) return decision
    return {
      kind: 'accept',
      content: [{ type: 'text', text: bounded }],
      ...(decision.additionalContexts ? { additionalContexts: decision.additionalContexts } : {}),
    }
  }, { prepend: true })

  ctx.on('tools/code-dispatch-log', async (dispatch, next) => {
    const content = await next()
    const text = flattenPlainText(content)
    if (text === undefined) return content
    const bounded = await bound(text, dispatch.name, 'dispatch')
    if (bounded === undefined) return content
    return [{ type: 'text', text: bounded }]
  }, { prepend: true })
}

// Symbol keys, not #private fields: cordis hands out services behind a Proxy,
// which private fields do not see through.
const STORE = Symbol('store')
const OPTIONS = Symbol('options')

/**
 * DSH's `spillStore` service on spillway's store: `saveText` stores the text
 * once by content (the same text is one object, whatever session saved it),
 * fsynced, private. The locator is the object's path when it is stored
 * uncompressed (the default, so that DSH's `read` and grep tools open it),
 * else its id.
 */
export class SpillwaySpillStore extends SpillStore {
  static Config = z.object({
    root: z.string(),
    compression: Compression,
    level: z.number(),
    durability: Durability,
  })

  /** The store's directory. */
  root
  /** How objects are stored: `none` (default) or `zstd`. */
  compression

  constructor(ctx, config = {}) {
    super(ctx)
    this.compression = config.compression ?? 'none'
    // Checks the options as a policy would, and opens the store.
    const spiller = new Spiller({
      store: config.root,
      compression: this.compression,
      ...(config.level !== undefined ? { level: config.level } : {}),
      durability: config.durability,
    })
    this[STORE] = spiller.store
    this.root = this[STORE].root
    this[OPTIONS] = { compression: this.compression, level: config.level, durability: config.durability ?? 'durable' }
  }

  /** The spillway store behind this service. */
  get store() {
    return this[STORE]
  }

  async saveText(input) {
    const obj = await this[STORE].put(input.content, this[OPTIONS])
    const short = obj.id.slice(0, 23)
    const raw = obj.compression === 'none'
    return {
      locator: SpillLocator(raw ? obj.path : obj.id),
      bytes: obj.bytes,
      retrievalHint: raw
        ? `Use read with offset/limit, or grep this path to search within it (spillway object ${short}).`
        : `Read it with: spillway --store ${this.root} show ${short} --lines A:B (the file is zstd-compressed).`,
    }
  }
}
