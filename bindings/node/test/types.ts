// Compiled by `npm run typecheck` (tsc --noEmit --strict): the shipped type
// definitions, as a TypeScript harness uses them.
import { Spiller, SpillwayError, Store, type Outcome } from 'spillway'
import * as SpillPolicy from 'spillway/dsh'
import { SpillwaySpillStore } from 'spillway/dsh'
import { spawn } from 'node:child_process'

export async function example(): Promise<number> {
  const spiller = new Spiller({ store: '/tmp/spill', maxInlineBytes: '16KiB', compression: 'zstd', level: 3 })
  const outcome: Outcome = await spiller.apply('text')
  const stage = spiller.stage()
  spawn('make').stdout.pipe(stage)
  const streamed = await stage.finish()
  if (streamed.spill) {
    const omitted: Buffer = await spiller.store.read(streamed.spill.id, { lines: '10:20' })
    void omitted
  }
  try {
    new Spiller({ maxInlineBytes: 10 })
  } catch (e) {
    if (e instanceof SpillwayError && e.code === 'ERR_SPILLWAY_BUDGET_TOO_SMALL') return 0
  }
  const store = new Store('/tmp/spill')
  const report = await store.gc({ maxBytes: '1GiB', maxAge: '7d', dryRun: true })
  void SpillPolicy.name
  void SpillwaySpillStore
  return outcome.totalBytes + report.freedBytes + (await store.stats()).objects
}
