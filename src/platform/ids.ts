import { randomFillSync } from 'node:crypto'
import type { Clock } from './clock'

/**
 * UUIDv7 (RFC 9562 §5.7) from the service clock, so ids sort with the test clock too. Within one
 * millisecond the 12-bit rand_a field is a counter seeded at random, keeping ids from one process
 * strictly increasing (RFC 9562 §6.2 method 1); when it overflows the timestamp is advanced by one.
 */
export function createIdGenerator(clock: Clock): () => string {
  let lastMs = -1
  let counter = 0
  // Random bytes drawn from the system a pool at a time (one call per RANDOM_POOL / 10 ids, not one
  // per id): a charge run asks for tens of thousands of ids in a few milliseconds.
  const pool = new Uint8Array(RANDOM_POOL)
  let used = RANDOM_POOL
  return function uuidv7(): string {
    let ms = Math.floor(clock.nowUs() / 1000)
    if (used + 10 > RANDOM_POOL) {
      randomFillSync(pool)
      used = 0
    }
    const r = used
    used += 10
    if (ms > lastMs) {
      lastMs = ms
      counter = ((pool[r]! << 8) | pool[r + 1]!) & 0x7ff // leave headroom in the 12 bits
    } else {
      ms = lastMs
      counter++
      if (counter > 0xfff) {
        lastMs = ++ms
        counter = 0
      }
    }
    const h = HEX
    return (
      h[(ms / 2 ** 40) & 0xff]! +
      h[(ms / 2 ** 32) & 0xff]! +
      h[(ms >>> 24) & 0xff]! +
      h[(ms >>> 16) & 0xff]! +
      '-' +
      h[(ms >>> 8) & 0xff]! +
      h[ms & 0xff]! +
      '-' +
      h[0x70 | ((counter >>> 8) & 0x0f)]! +
      h[counter & 0xff]! +
      '-' +
      h[0x80 | (pool[r + 2]! & 0x3f)]! +
      h[pool[r + 3]!]! +
      '-' +
      h[pool[r + 4]!]! +
      h[pool[r + 5]!]! +
      h[pool[r + 6]!]! +
      h[pool[r + 7]!]! +
      h[pool[r + 8]!]! +
      h[pool[r + 9]!]!
    )
  }
}

/** Bytes of randomness drawn at once (a multiple of the 10 one id takes). */
const RANDOM_POOL = 4000
/** Each byte as two lower-case hex digits. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

export function isUuid(text: string): boolean {
  return UUID.test(text)
}

/** The millisecond timestamp carried by a UUIDv7. */
export function uuidv7Millis(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16)
}
