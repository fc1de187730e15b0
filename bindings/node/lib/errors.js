// Native errors carry `CODE \x1f message` (store errors: `CODE \x1f kind \x1f
// message`); here they become Errors with a stable `code`.

const SEP = '\u001f'

/** An error from spillway: `code` is stable, `message` is the Rust message. */
export class SpillwayError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {{ kind?: string, outcome?: object }} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message)
    this.name = 'SpillwayError'
    this.code = code
    if (extra.kind !== undefined) this.kind = extra.kind
    if (extra.outcome !== undefined) this.outcome = extra.outcome
  }
}

/** The error a native error stands for (others are returned as they are). */
export function fromNative(e) {
  if (!(e instanceof Error) || !e.message.includes(SEP)) return e
  const parts = e.message.split(SEP)
  if (parts[0] === 'ERR_SPILLWAY_STORE' && parts.length >= 3) {
    return new SpillwayError(parts[0], parts.slice(2).join(SEP), { kind: parts[1] })
  }
  return new SpillwayError(parts[0], parts.slice(1).join(SEP))
}

/** Runs `fn`, rethrowing a native error as a SpillwayError. */
export function call(fn) {
  try {
    return fn()
  } catch (e) {
    throw fromNative(e)
  }
}

/** Awaits `promise`, rethrowing a native error as a SpillwayError. */
export async function settle(promise) {
  try {
    return await promise
  } catch (e) {
    throw fromNative(e)
  }
}

export function invalid(message) {
  return new SpillwayError('ERR_SPILLWAY_POLICY', message)
}
