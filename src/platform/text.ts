/**
 * Characters that must not reach a name another person reads: C0 and C1 controls (\p{Cc}) and the
 * Unicode Bidi_Control set (U+061C, U+200E, U+200F, U+202A–202E, U+2066–2069). A right-to-left
 * override (U+202E) makes "rig-exe.txt" display as "rig-txt.exe"; controls break logs, CSV and
 * terminals. Written as \u ranges rather than \p{Cc}: TypeBox and Elysia compile patterns
 * without the `u` flag, and every one of these is in the Basic Multilingual Plane.
 */
export const UNSAFE_TEXT_CHARS = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069'

/** A JSON Schema pattern accepting any text without those characters. */
export const SAFE_TEXT_PATTERN = `^[^${UNSAFE_TEXT_CHARS}]*$`

const UNSAFE = new RegExp(`[${UNSAFE_TEXT_CHARS}]`, 'g')
const LINE_BREAKS = /[\t\n\v\f\r]+/g

/**
 * What an agent reports is kept, not refused (an old agent cannot fix its hostname): tabs and line
 * breaks become one space, every other control or bidi character is removed.
 */
export function stripUnsafeText(text: string): string {
  return text.replace(LINE_BREAKS, ' ').replace(UNSAFE, '')
}
