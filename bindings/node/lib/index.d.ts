/// <reference types="node" />
import { Writable } from 'node:stream'

/** A size: bytes, or a string such as `'32KiB'`. */
export type Size = number | string

/** Policy options, checked as the Rust policy checks them. */
export interface PolicyOptions {
  /** The cap on the model-facing text in UTF-8 bytes, notice included. Default 32 KiB. */
  maxInlineBytes?: Size
  /** An optional cap in lines, notice included. */
  maxInlineLines?: number
  /** The head's share of the preview in percent; the tail gets the rest. Default 30. */
  headPercent?: number
  /** The most bytes one stored object keeps. Default 64 MiB. */
  maxSpillBytes?: Size
  /** How stored objects are compressed. Default `'zstd'`. */
  compression?: 'none' | 'zstd'
  /** The zstd level, 1 to 22. Default 1. */
  level?: number
  /** When the store fails: a bounded preview that says so (default), or an error that hands it back. */
  onStoreError?: 'preview' | 'fail'
  /** `'durable'` (fsync before the outcome; default) or `'relaxed'`. */
  durability?: 'durable' | 'relaxed'
  /** `'text'` (head, notice, tail; default), `'json'` (a JSON document's preview stays JSON of the same shape, with markers), or `'auto'` (JSON when the input is one JSON document). */
  format?: 'text' | 'json' | 'auto'
  /** `'terminal'` (default: what a terminal would show, escapes removed, progress bars as their last frame, repeats folded, error lines of an omitted middle kept) or `'raw'` (the bytes as they are). The stored object is always the raw bytes. */
  render?: 'terminal' | 'raw'
  /** Regular expressions (Rust syntax) of the lines an omitted middle keeps between head and tail; `[]` for none. A string ranks as an error; `{ pattern, rank }` gives another rank. Default: built-in ranked patterns. */
  salient?: (string | { pattern: string; rank?: 'error' | 'warning' | 'word' })[]
  /** The most of the budget salient lines take, in percent. Default 20. */
  salientPercent?: number
  /** An optional cap in tokens, notice included, counted with `tokenizer`. */
  maxInlineTokens?: number
  /** `'o200k'` (default), `'cl100k'` (vocabularies built in) or `'approx'` (4 bytes a token). */
  tokenizer?: 'o200k' | 'cl100k' | 'approx'
  /** Notice templates (see the project's guide, docs/guide.md); `pointer` is the read hint in a JSON preview's markers. */
  notice?: Partial<Record<'omitted' | 'binary' | 'lossy' | 'stored' | 'unsaved' | 'pointer', string>>
}

export interface SpillerOptions extends PolicyOptions {
  /** The store: a directory, `s3://BUCKET/PREFIX`, or a Store. Default: `$SPILLWAY_STORE`, else the CLI's default. */
  store?: string | Store
}

/** A stored object: `spill` in `spillway apply --json`. */
export interface StoredObject {
  id: string
  path: string
  bytes: number
  storedBytes: number
  compression: 'none' | 'zstd'
  truncated: boolean
  dedup: boolean
}

/** What a policy made of an output: the fields of `spillway apply --json`, camelCase. Absent values are left out. */
export interface Outcome {
  spilled: boolean
  content: string
  totalBytes: number
  totalLines: number
  headBytes: number
  tailBytes: number
  omittedBytes: number
  omittedLines: number
  omittedRange?: [number, number]
  invalidUtf8: boolean
  binary: boolean
  spill?: StoredObject
  storeError?: string
  /** What kind of store failure that was (see the reference's error kinds). */
  storeErrorKind?: 'no_space' | 'permission_denied' | 'read_only' | 'not_regular_file' | 'not_found' | 'ambiguous' | 'corrupt' | 'out_of_range' | 'other_io' | 'config'
  /** `'json'` when `content` is a JSON preview, else `'text'`. */
  format: 'text' | 'json'
  /** With `format: 'json'` in the policy: why the input got the text preview instead. */
  jsonError?: string
  /** Whether the terminal render changed the text (escapes, frames, folded repeats). */
  rendered: boolean
  /** The raw line numbers of the salient lines shown between head and notice. */
  salientLines: number[]
  /** The content's length in tokens, with a token budget. */
  contentTokens?: number
  /** The tokenizer `contentTokens` was counted with. */
  tokenizer?: 'o200k' | 'cl100k' | 'approx'
}

/** An error from spillway, with a stable code (`ERR_SPILLWAY_BUDGET_TOO_SMALL`, `ERR_SPILLWAY_STORE`, ...). */
export class SpillwayError extends Error {
  code: string
  /** For `ERR_SPILLWAY_STORE`: `no_space`, `permission_denied`, `not_found`, `corrupt`, ... */
  kind?: string
  /** In `onStoreError: 'fail'` mode: the bounded preview, all the same. */
  outcome?: Outcome
}

/** An object as `Store.list` gives it (`dedup` is false in a listing). */
export type ListedObject = StoredObject

export interface VerifyReport {
  ok: number
  okBytes: number
  corrupt: { id: string; reason: string; quarantined: string | null }[]
  tempRemoved: number
  notRegular: { path: string; kind: string; quarantined: string | null }[]
}

export interface GcReport {
  removed: { id: string; path: string; bytes: number; storedBytes: number; compression: 'none' | 'zstd' }[]
  freedBytes: number
  keptReferenced: number
  restored: number
  remainingObjects: number
  remainingBytes: number
  tempRemoved: number
}

export interface Stats {
  objects: number
  zstdObjects: number
  storedBytes: number
  bytes: number
  tempFiles: number
  quarantined: number
  ratio: number
}

/** A duration: seconds, or a string such as `'7d'`. */
export type Duration = number | string

export class Store {
  constructor(root: string)
  readonly root: string
  read(id: string, range?: { lines?: string; bytes?: string }): Promise<Buffer>
  resolve(prefix: string): Promise<string>
  list(): Promise<ListedObject[]>
  verify(options?: { grace?: Duration }): Promise<VerifyReport>
  gc(options?: { maxBytes?: Size; maxAge?: Duration; keepReferencedBy?: string[]; dryRun?: boolean; grace?: Duration }): Promise<GcReport>
  put(data: string | Uint8Array, options?: { compression?: 'none' | 'zstd'; level?: number; durability?: 'durable' | 'relaxed' }): Promise<StoredObject>
  stats(): Promise<Stats>
}

/** A Writable stage: pipe an output in, then `await finish()`. */
export class Stage extends Writable {
  /** The outcome, once finished. */
  outcome: Outcome | undefined
  readonly bytesWritten: number
  /** Ends the input (unless a stream is piped in) and resolves to the outcome. */
  finish(): Promise<Outcome>
}

export class Spiller {
  constructor(options?: SpillerOptions)
  readonly store: Store
  readonly policy: Record<string, unknown>
  apply(input: string | Uint8Array): Promise<Outcome>
  stage(): Stage
}

/** The store the CLI uses when given none. */
export function defaultStore(): string
