import type { Context } from '@deepseek-ai/cordis'
import { SpillStore } from '@deepseek-ai/dsh-spill'
import type { SaveTextSpill, SpillRef } from '@deepseek-ai/dsh-spill'
import type { Size, Spiller, Store } from '../lib/index.js'

/** The plugin's config: DSH's `maxInlineBytes` plus spillway's options. */
export interface Config {
  maxInlineBytes?: number
  maxInlineLines?: number
  headPercent?: number
  maxSpillBytes?: Size
  compression?: 'none' | 'zstd'
  level?: number
  durability?: 'durable' | 'relaxed'
  /** The store directory; default: the SpillwaySpillStore's, else spillway's default store. */
  store?: string
}
export const Config: unknown
export const name: 'spill-policy'
export const inject: ['tools']
export function apply(ctx: Context, config: Config): void
export function spillerFor(config: Config, backend: unknown): Spiller

export interface SpillwaySpillStoreConfig {
  root?: string
  compression?: 'none' | 'zstd'
  level?: number
  durability?: 'durable' | 'relaxed'
}

/** DSH's spillStore service on spillway's store. */
export class SpillwaySpillStore extends SpillStore {
  static Config: unknown
  constructor(ctx: Context, config?: SpillwaySpillStoreConfig)
  readonly root: string
  readonly compression: 'none' | 'zstd'
  readonly store: Store
  saveText(input: SaveTextSpill): Promise<SpillRef>
}
