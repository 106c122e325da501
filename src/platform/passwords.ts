import { Algorithm, hash, verify } from '@node-rs/argon2'
import { dictionary } from '@zxcvbn-ts/language-common'
import type { FieldError } from './problem'

/**
 * Passwords: argon2id at OWASP's minimum (m=19 MiB, t=2, p=1), 8 to 256 characters counted as
 * Unicode code points, never truncated or normalised, no composition rules; the ~49,000 most common
 * passwords (zxcvbn-ts's ranked list) are refused.
 */
const PARAMS = { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const

export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 256

const COMMON = new Set((dictionary['passwords-common'] as string[]).map((p) => p.toLowerCase()))

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS)
}

let verifications = 0
/**
 * How many argon2 verifications this process has started: the sign-in timing test counts them to
 * show that an unknown email does the same password work as a wrong password, with no bound on how
 * long that work takes on the machine at hand.
 */
export function passwordVerifications(): number {
  return verifications
}

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  verifications++
  try {
    return await verify(stored, password)
  } catch {
    return false
  }
}

let dummy: Promise<string> | null = null
/**
 * Verifies against a fixed hash and always answers false: a sign-in for an unknown email does the
 * same argon2 work as a wrong password, so timing does not tell them apart.
 */
export async function burnPasswordCheck(password: string): Promise<false> {
  dummy ??= hashPassword('not-a-real-password-' + crypto.randomUUID())
  await verifyPassword(await dummy, password)
  return false
}

/** The policy problem with a new password, as a field error on `path`, or null when it is fine. */
export function passwordProblem(password: string, path = '/password'): FieldError | null {
  const length = [...password].length
  if (length < PASSWORD_MIN) return { path, code: 'too_short' }
  if (length > PASSWORD_MAX) return { path, code: 'too_long' }
  if (COMMON.has(password.toLowerCase())) return { path, code: 'too_common' }
  return null
}
