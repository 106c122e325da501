import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from './cursor'
import { Type, type TLiteral, type TProperties, type TSchema, type TUnion } from '@sinclair/typebox'
import { t } from 'elysia'
import { MONEY_PATTERN } from './money'
import { PROBLEM_CODE_LIST } from './problem'
import { SAFE_TEXT_PATTERN } from './text'

/**
 * Shared wire types. Request bodies use TypeBox's `Type` (strict: "5" is not an integer);
 * query strings and path parameters use Elysia's `t`, which coerces their text into numbers.
 */

export const Uuid = (opts: { description?: string } = {}) => Type.String({ format: 'uuid', ...opts })
/** The path parameters of a route on one resource by its id: `/…/{id}`. */
export const IdParams = t.Object({ id: t.String({ format: 'uuid' }) })
export const Timestamp = (opts: { description?: string } = {}) =>
  Type.String({
    format: 'date-time',
    description: opts.description ?? 'RFC 3339 UTC timestamp with microsecond precision, e.g. 2026-11-22T14:20:00.123456Z',
  })
export const Money = (opts: { description?: string } = {}) =>
  Type.String({
    pattern: MONEY_PATTERN,
    description: opts.description ?? 'USD amount as a decimal string (never a JSON number), up to 6 fraction digits',
    examples: ['12.50'],
  })
/**
 * Text a user chooses and others read (server, group and token names, tags' values, reasons):
 * control and bidi characters are refused with 422 (`pattern`), see src/platform/text.ts.
 */
export const DisplayText = (opts: { minLength?: number; maxLength: number; description?: string }) => Type.String({ ...opts, pattern: SAFE_TEXT_PATTERN })
export const Nullable = <T extends TSchema>(schema: T, opts: { description?: string } = {}) => Type.Union([schema, Type.Null()], opts)

/** A closed set of string values, keeping their literal types. */
export function Literals<const T extends readonly string[]>(values: T, opts: { description?: string } = {}) {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    opts,
  ) as unknown as TUnion<{ -readonly [K in keyof T]: TLiteral<T[K]> }>
}

const FieldErrorSchema = Type.Object({
  path: Type.String({ maxLength: 512, description: 'JSON Pointer to the offending field' }),
  code: Type.String({ maxLength: 64 }),
})

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: 'uri' }),
    title: Type.String({ maxLength: 256 }),
    status: Type.Integer({ minimum: 100, maximum: 599 }),
    code: Type.Union(PROBLEM_CODE_LIST.map((c) => Type.Literal(c))),
    detail: Type.Optional(Type.String({ maxLength: 2048 })),
    instance: Type.Optional(Type.String({ maxLength: 512 })),
    request_id: Type.Optional(Type.String({ format: 'uuid' })),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { maxItems: 100 })),
  },
  // x-media-type: the response content type the OpenAPI document gives it (patches/ teaches the plugin).
  { $id: 'Problem', description: 'RFC 9457 problem document (application/problem+json)', 'x-media-type': 'application/problem+json' },
)

/**
 * The response map of a route: its success schemas plus a problem document for each error status
 * it lists (and 500, which any route can answer). 304 is documented without a body.
 */
export function responses<S extends Record<number, TSchema>>(success: S, problemStatuses: number[]): S {
  const out: Record<number, TSchema | string> = { ...success }
  // 'Problem' names the model registered once in app.ts, so the document holds one $ref'd schema.
  for (const status of new Set([...problemStatuses, 500])) out[status] = status === 304 ? NotModified : 'Problem'
  return out as unknown as S
}

/** `limit` and `cursor` of every list operation. */
export const PageQuery = {
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor from a previous next_cursor' })),
  limit: t.Optional(
    t.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE, description: `Page size, 1..${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}` }),
  ),
}

/**
 * The answer of a list operation, one page of it: `items` and `next_cursor` (the `cursor` of the
 * next page, null on the last). `maxItems` bounds the page where the operation documents a bound
 * (most: MAX_PAGE_SIZE), `cursorMaxLength` the cursor where it documents one; `fields` come before
 * the two (the fleet list's snapshot envelope).
 */
export function PageOf<T extends TSchema, F extends TProperties = Record<never, never>>(
  item: T,
  opts: { maxItems?: number; cursorMaxLength?: number } = {},
  fields: F = {} as F,
) {
  return Type.Object({
    ...fields,
    items: Type.Array(item, opts.maxItems === undefined ? {} : { maxItems: opts.maxItems }),
    next_cursor: Nullable(Type.String(opts.cursorMaxLength === undefined ? {} : { maxLength: opts.cursorMaxLength })),
  })
}

/**
 * A response that is not JSON (a page, a file, a script): its media types as the document lists them
 * (the `x-media-type` patches/ teaches the plugin; without it a string would be documented as
 * text/plain). The contract test holds each answer's Content-Type to this list.
 */
export const Served = (mediaType: string | readonly string[], description: string) => Type.String({ description, 'x-media-type': mediaType })

/**
 * Options of a JSON answer's schema that the operation also serves as other media types, by their
 * description: `alsoServed({ 'text/csv': 'one row per …' })` (a report as CSV, src/platform/openapi.ts).
 */
export const alsoServed = (mediaTypes: Record<string, string>) => ({ 'x-also-served': mediaTypes })

export const NoContent = Type.Null({ description: 'No content' })
const NotModified = Type.Null({ description: 'Not modified: the If-None-Match tag still matches; no body' })
