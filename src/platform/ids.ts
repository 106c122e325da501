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
  const rand = new Uint8Array(10)
  return function uuidv7(): string {
    let ms = Math.floor(clock.nowUs() / 1000)
    randomFillSync(rand)
    if (ms > lastMs) {
      lastMs = ms
      counter = ((rand[0]! << 8) | rand[1]!) & 0x7ff // leave headroom in the 12 bits
    } else {
      ms = lastMs
      counter++
      if (counter > 0xfff) {
        lastMs = ++ms
        counter = 0
      }
    }
    const b = new Uint8Array(16)
    b[0] = (ms / 2 ** 40) & 0xff
    b[1] = (ms / 2 ** 32) & 0xff
    b[2] = (ms >>> 24) & 0xff
    b[3] = (ms >>> 16) & 0xff
    b[4] = (ms >>> 8) & 0xff
    b[5] = ms & 0xff
    b[6] = 0x70 | ((counter >>> 8) & 0x0f)
    b[7] = counter & 0xff
    b[8] = 0x80 | (rand[2]! & 0x3f)
    b.set(rand.subarray(3, 10), 9)
    const hex = Buffer.from(b).toString('hex')
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i

export function isUuid(text: string): boolean {
  return UUID.test(text)
}

/** The millisecond timestamp carried by a UUIDv7. */
export function uuidv7Millis(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16)
}
