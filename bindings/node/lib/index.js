// spillway for Node.js: a thin layer over the native engine. Hashing,
// compression, writing and fsync run on libuv's thread pool; this file turns
// Node's idioms (camelCase options, strings and Buffers, promises, streams)
// into the native calls.

import { createRequire } from 'node:module'
import { Writable } from 'node:stream'
import { readFile } from 'node:fs/promises'
import path from 'node:path'

import { SpillwayError, call, fromNative, invalid, settle } from './errors.js'

const require = createRequire(import.meta.url)
const native = require('../native.cjs')

export { SpillwayError }

/** Policy options, camelCase, and their config keys. */
const POLICY_KEYS = {
  maxInlineBytes: 'max_inline_bytes',
  maxInlineLines: 'max_inline_lines',
  headPercent: 'head_percent',
  maxSpillBytes: 'max_spill_bytes',
  compression: 'compression',
  level: 'zstd_level',
  onStoreError: 'on_store_error',
  durability: 'durability',
  format: 'format',
  render: 'render',
  salient: 'salient',
  salientPercent: 'salient_percent',
  maxInlineTokens: 'max_inline_tokens',
  tokenizer: 'tokenizer',
  notice: 'notice',
}
const SIZE_KEYS = new Set(['maxInlineBytes', 'maxSpillBytes'])
/** UTF-16 units per slice when a long string is applied: 1 Mi. */
const SLICE = 1 << 20
const NOTICE_KEYS = new Set(['omitted', 'binary', 'lossy', 'stored', 'unsaved', 'pointer'])

function policyConfig(options) {
  const config = {}
  for (const [key, value] of Object.entries(options)) {
    if (key === 'store' || value === undefined) continue
    const name = POLICY_KEYS[key]
    if (name === undefined) throw invalid(`unknown option \`${key}\` (known: store, ${Object.keys(POLICY_KEYS).join(', ')})`)
    if (key === 'notice') {
      if (value === null || typeof value !== 'object') throw invalid('notice must be an object of templates')
      for (const [k, v] of Object.entries(value)) {
        if (!NOTICE_KEYS.has(k)) throw invalid(`unknown notice template \`${k}\` (known: ${[...NOTICE_KEYS].join(', ')})`)
        if (typeof v !== 'string') throw invalid(`notice.${k} must be a string`)
      }
    } else if (['compression', 'onStoreError', 'durability', 'format', 'render', 'tokenizer'].includes(key)) {
      if (typeof value !== 'string') throw invalid(`${key} must be a string`)
    } else if (key === 'salient') {
      if (!Array.isArray(value) || !value.every((p) => typeof p === 'string')) {
        throw invalid('salient must be an array of regular expressions (strings)')
      }
    } else if (!(SIZE_KEYS.has(key) && typeof value === 'string') && !(Number.isSafeInteger(value) && value >= 0)) {
      throw invalid(`${key} must be a whole number 0 or more${SIZE_KEYS.has(key) ? " or a size such as '32KiB'" : ''}, got ${String(value)}`)
    }
    config[name] = value
  }
  return config
}

/**
 * The store the CLI uses when given none: `$SPILLWAY_STORE`, else
 * `$XDG_CACHE_HOME/spillway`, else `~/.cache/spillway`.
 */
export function defaultStore() {
  return chooseStore(undefined).root
}

/** A directory made absolute; an `s3://BUCKET/PREFIX` URL as it is. */
function location(store) {
  return store.startsWith('s3://') ? store : path.resolve(store)
}

function chooseStore(store) {
  // `named`: the store was chosen, so notices name it, as the CLI's do.
  if (store instanceof Store) return { root: store.root, named: true }
  if (typeof store === 'string') return { root: location(store), named: true }
  if (store !== undefined) throw invalid('store must be a directory path or a Store')
  // One rule for every front end, in the Rust core.
  const found = native.defaultStore()
  if (found) return { root: found.chosen ? location(found.location) : found.location, named: found.chosen }
  throw new SpillwayError('ERR_SPILLWAY_STORE', 'no store directory: pass { store } or set SPILLWAY_STORE', { kind: 'not_found' })
}

function camel(value) {
  if (Array.isArray(value)) return value.map(camel)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [k, v] of Object.entries(value)) out[k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())] = camel(v)
  return out
}

function toBuffer(input, what) {
  if (typeof input === 'string') return Buffer.from(input, 'utf8')
  if (Buffer.isBuffer(input)) return input
  if (input instanceof Uint8Array) return Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  throw new TypeError(`${what} takes a string, a Buffer or a Uint8Array, got ${input === null ? 'null' : typeof input}`)
}

/** The outcome of a stage result, or the error it stands for (fail mode). */
function unwrap(result) {
  if (result.failure) {
    const { code, kind, message } = result.failure
    throw new SpillwayError(code, message, { kind, outcome: result.outcome })
  }
  return result.outcome
}

function seconds(what, value) {
  if (typeof value === 'string') return call(() => native.parseDuration(value))
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value
  throw new SpillwayError('ERR_SPILLWAY_INVALID_ARG', `${what} must be seconds (0 or more) or a string such as '7d', got ${String(value)}`)
}

function bytes(what, value) {
  if (typeof value === 'string') return call(() => native.parseSize(value))
  if (Number.isSafeInteger(value) && value >= 0) return value
  throw new SpillwayError('ERR_SPILLWAY_INVALID_ARG', `${what} must be bytes (0 or more) or a string such as '1GiB', got ${String(value)}`)
}

/**
 * A spill store: a private directory of content-addressed objects, written
 * once, crash-safe, read back verified. Ids may be whole or any unique
 * prefix of at least 4 hex digits (the short id a notice prints).
 */
export class Store {
  #native

  /** @param {string} root the store's directory (created private when first written), or `s3://BUCKET/PREFIX` */
  constructor(root) {
    this.#native = root instanceof native.NativeStore ? root : call(() => new native.NativeStore(location(root)))
  }

  /** The store's directory. */
  get root() {
    return this.#native.root
  }

  /** An object's bytes, verified: all, `{ lines: 'A:B' }` or `{ bytes: 'A:B' }`. */
  async read(id, range = {}) {
    const { lines, bytes: byteRange, ...rest } = range
    if (Object.keys(rest).length) throw new SpillwayError('ERR_SPILLWAY_RANGE', `read takes { lines } or { bytes }, not ${Object.keys(rest).join(', ')}`)
    return settle(call(() => this.#native.read(id, lines, byteRange)))
  }

  /** The full id of the one object whose id starts with `prefix`. */
  async resolve(prefix) {
    return settle(call(() => this.#native.resolve(prefix)))
  }

  /** Every object in the store. */
  async list() {
    return camel(JSON.parse(await settle(this.#native.list())))
  }

  /** Re-hashes every object; corrupt ones are moved to quarantine. */
  async verify({ grace = 900 } = {}) {
    return camel(JSON.parse(await settle(call(() => this.#native.verify(seconds('grace', grace))))))
  }

  /**
   * Removes least-recently-used objects down to `maxBytes` on disk and
   * objects unused for longer than `maxAge`, never those a session log in
   * `keepReferencedBy` refers to.
   */
  async gc({ maxBytes, maxAge, keepReferencedBy = [], dryRun = false, grace = 900 } = {}) {
    const keepTexts = await Promise.all(keepReferencedBy.map(async (p) => (await readFile(p)).toString('utf8')))
    const args = {
      max_bytes: maxBytes === undefined ? null : bytes('maxBytes', maxBytes),
      max_age_seconds: maxAge === undefined ? null : seconds('maxAge', maxAge),
      keep_texts: keepTexts,
      dry_run: Boolean(dryRun),
      grace_seconds: seconds('grace', grace),
    }
    return camel(JSON.parse(await settle(call(() => this.#native.gc(JSON.stringify(args))))))
  }

  /**
   * Stores `data` (a string or bytes) whole, once: storing the same bytes
   * again is a dedup hit. Resolves to the stored object.
   */
  async put(data, { compression = 'zstd', level, durability = 'durable' } = {}) {
    if (durability !== 'durable' && durability !== 'relaxed') {
      throw new SpillwayError('ERR_SPILLWAY_INVALID_ARG', `durability must be durable or relaxed, got ${String(durability)}`)
    }
    const buf = toBuffer(data, 'put')
    const json = await settle(call(() => this.#native.put(buf, compression, level, durability === 'durable')))
    return camel(JSON.parse(json))
  }

  /** Totals over the store. */
  async stats() {
    return camel(JSON.parse(await settle(this.#native.stats())))
  }
}

/**
 * An output being measured, previewed and stored as it arrives: a Writable
 * stream (`child.stdout.pipe(stage)`), whose `finish()` ends the input and
 * resolves to the outcome. Memory stays about twice the budget for any
 * length of input. A destroyed stage stores nothing.
 */
export class Stage extends Writable {
  #native
  #done
  #sources = 0
  /** The outcome, once finished. */
  outcome = undefined

  constructor(nativeStage) {
    super({ highWaterMark: 1 << 20 })
    this.#native = nativeStage
    // A stream piped in ends the stage itself, when it ends.
    this.on('pipe', () => { this.#sources += 1 })
    this.on('unpipe', () => { this.#sources -= 1 })
    let resolve, reject
    this.#done = new Promise((res, rej) => { resolve = res; reject = rej })
    this.#done.catch(() => {})
    this._resolve = resolve
    this._reject = reject
  }

  _write(chunk, encoding, callback) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk
    this.#native.write(buf).then(() => callback(), (e) => callback(fromNative(e)))
  }

  _final(callback) {
    this.#native.finish().then(
      (result) => {
        try {
          this.outcome = unwrap(result)
          this._resolve(this.outcome)
          callback()
        } catch (e) {
          this._reject(e)
          callback(e)
        }
      },
      (e) => {
        const err = fromNative(e)
        this._reject(err)
        callback(err)
      },
    )
  }

  _destroy(error, callback) {
    if (!this.#native.finished) this.#native.abort()
    this._reject(error ?? new SpillwayError('ERR_SPILLWAY_STAGE_FINISHED', 'the stage was destroyed before it finished'))
    callback(error)
  }

  /** Bytes taken in so far. */
  get bytesWritten() {
    return this.#native.bytesWritten
  }

  /**
   * Resolves to the outcome. Ends the input first, unless a stream is piped
   * in: then the outcome comes when that stream ends.
   */
  finish() {
    if (this.#sources === 0 && !this.writableEnded && !this.destroyed) this.end()
    return this.#done
  }
}

/**
 * A spill policy over a store. Build one and share it; many stages can run
 * at once. Options are checked as the Rust policy checks them; a bad one
 * throws a SpillwayError whose `code` names the rule
 * (`ERR_SPILLWAY_BUDGET_TOO_SMALL`, ...).
 */
export class Spiller {
  #native
  #store

  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('Spiller takes an options object')
    const config = policyConfig(options)
    const { root, named } = chooseStore(options.store)
    this.#native = call(() => new native.NativeSpiller(root, JSON.stringify(config), named))
    this.#store = new Store(this.#native.store())
  }

  /** The store outputs are spilled to. */
  get store() {
    return this.#store
  }

  /** The policy in force, with camelCase keys. */
  get policy() {
    const { zstdLevel, ...policy } = camel(JSON.parse(this.#native.policy()))
    return zstdLevel === undefined ? policy : { ...policy, level: zstdLevel }
  }

  /**
   * Applies the policy to a whole output (a string, a Buffer or a
   * Uint8Array; do not change a buffer until the promise settles).
   */
  async apply(input) {
    if (typeof input === 'string' && input.length > SLICE) return this.#applyString(input)
    const buf = toBuffer(input, 'apply')
    return unwrap(await settle(this.#native.apply(buf)))
  }

  // A long string goes to the engine in slices: the next slice is encoded
  // on the event loop while the engine hashes and compresses the last one
  // on the thread pool, and no UTF-8 copy of the whole string is made.
  async #applyString(text) {
    const stage = this.#native.stage()
    // Two buffers, one being filled while the other is in flight: a slice
    // of SLICE units is at most 3 * SLICE bytes of UTF-8.
    const pool = [Buffer.allocUnsafe(3 * SLICE), Buffer.allocUnsafe(3 * SLICE)]
    let inFlight = Promise.resolve()
    try {
      for (let i = 0, k = 0; i < text.length; k++) {
        let end = Math.min(i + SLICE, text.length)
        // Never split a surrogate pair (it would encode as two U+FFFD).
        const last = text.charCodeAt(end - 1)
        if (end < text.length && last >= 0xd800 && last <= 0xdbff) end -= 1
        // This buffer's previous write was awaited an iteration ago.
        const buf = pool[k % 2]
        const n = buf.write(text.slice(i, end), 0, 'utf8')
        await inFlight
        inFlight = stage.write(buf.subarray(0, n))
        i = end
      }
      await inFlight
    } catch (e) {
      stage.abort()
      throw fromNative(e)
    }
    return unwrap(await settle(stage.finish()))
  }

  /** A stage for an output that arrives in chunks. */
  stage() {
    return new Stage(this.#native.stage())
  }
}
