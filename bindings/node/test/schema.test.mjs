// The Node.js types against the one description of the outcome,
// schema/outcome.schema.json: the declared interfaces have the schema's
// fields, camelCase, in order, optional exactly where the schema allows
// null, with the schema's values where they are literal unions; and real
// outcomes carry only those fields, with values the schema allows.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'

import { Spiller } from 'spillway'
import { REPO, logText, tempStore } from './helpers.mjs'

const schema = JSON.parse(readFileSync(path.join(REPO, 'schema', 'outcome.schema.json'), 'utf8'))
const dts = readFileSync(path.join(REPO, 'bindings', 'node', 'lib', 'index.d.ts'), 'utf8')

const camel = (s) => s.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase())
const nullable = (p) => (p.oneOf ?? []).some((alt) => alt.type === 'null')
const resolve = (p) => (p.$ref ? schema.$defs[p.$ref.split('/').pop()] : p)
/** The values a property may take when the schema lists them. */
function values(p) {
  if (p.enum) return p.enum
  const alt = (p.oneOf ?? []).map(resolve).find((a) => a.enum)
  return alt?.enum
}

/** The fields of `interface name { … }`: name, optional, type text. */
function declared(name) {
  const body = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))[1]
  return [...body.matchAll(/^ {2}(\w+)(\??): (.+)$/gm)].map((m) => ({ name: m[1], optional: m[2] === '?', type: m[3] }))
}

for (const [iface, props] of [
  ['Outcome', schema.properties],
  ['StoredObject', schema.$defs.stored_object.properties],
]) {
  test(`${iface} declares the schema's fields, in order, optional where null is allowed`, () => {
    const fields = declared(iface)
    assert.deepEqual(fields.map((f) => f.name), Object.keys(props).map(camel))
    for (const f of fields) {
      const [key, prop] = Object.entries(props).find(([k]) => camel(k) === f.name)
      assert.equal(f.optional, nullable(prop), `${iface}.${f.name}: optional exactly when ${key} may be null`)
      const literals = [...f.type.matchAll(/'([^']*)'/g)].map((m) => m[1])
      if (literals.length) assert.deepEqual(literals, values(prop), `${iface}.${f.name}: the schema's values`)
    }
  })
}

/** The outcome back in the wire format: snake_case, absent values null. */
function toWire(o, props) {
  const out = {}
  for (const [key, prop] of Object.entries(props)) {
    const v = o[camel(key)]
    const target = (prop.oneOf ?? []).map(resolve).find((a) => a.properties)
    out[key] = v === undefined ? null : target ? toWire(v, target.properties) : v
  }
  return out
}

function check(wire, props, at = '') {
  for (const [key, prop] of Object.entries(props)) {
    const v = wire[key]
    if (v === null) {
      assert.ok(nullable(prop), `${at}${key} is null, which the schema does not allow`)
      continue
    }
    const allowed = values(prop)
    if (allowed) assert.ok(allowed.includes(v), `${at}${key}: ${v} is not one of ${allowed}`)
    const nested = (prop.oneOf ?? []).map(resolve).find((a) => a.properties)
    if (nested) check(v, nested.properties, `${at}${key}.`)
  }
}

test('real outcomes carry only the schema\'s fields, with values it allows', async () => {
  const s = new Spiller({ store: tempStore(), maxInlineBytes: '2KiB', maxInlineTokens: 600 })
  const doc = JSON.stringify({ rows: Array.from({ length: 2000 }, (_, n) => ({ n })) })
  const json = new Spiller({ store: tempStore(), maxInlineBytes: '2KiB', format: 'json' })
  const outcomes = [await s.apply('fits\n'), await s.apply(logText(3000, 1500)), await s.apply(logText(3000, 1500)), await json.apply(doc)]
  for (const o of outcomes) {
    const known = new Set(Object.keys(schema.properties).map(camel))
    for (const k of Object.keys(o)) assert.ok(known.has(k), `${k} is not in the schema`)
    check(toWire(o, schema.properties), schema.properties)
  }
  assert.equal(outcomes[3].format, 'json')
  assert.equal(outcomes[2].spill.dedup, true)
})
