import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'

/**
 * The OpenAPI document served at GET /api/v1/openapi.json: @elysiajs/openapi turns the routes'
 * TypeBox schemas and `detail` into paths (patched in patches/: null in enums, media types), and
 * `finishDocument` below corrects, in one place, what the plugin writes wrong for every route of a
 * kind, so no route has to work around it. scripts/check lints the result with Redocly and Spectral
 * and tests/http/contract.test.ts checks real answers against it (docs/conventions.md "OpenAPI").
 */

type Schema = Record<string, unknown>
type Content = Record<string, { schema?: Schema }>
type Operation = {
  parameters?: { name: string; in: string; schema?: Schema }[]
  requestBody?: { content?: Content }
  responses?: Record<string, { content?: Content }>
}
export type OpenApiDocument = {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components: { schemas?: Record<string, Schema> } & Record<string, unknown>
} & Record<string, unknown>

type DocumentOptions = {
  /** info, servers, tags, security schemes: everything but paths and component schemas. */
  documentation: Record<string, unknown> & { components?: Record<string, unknown> }
  /** Routes (their Elysia paths) left out of the document. */
  exclude: string[]
  /** "METHOD /path" of the routes that also take application/x-www-form-urlencoded (src/platform/http.ts). */
  formRoutes: ReadonlySet<string>
}

const OPENAPI_VERSION = '3.1.2'

/** Builds the document from the app's routes once, at the first request (every route is registered by then). */
export function openapiDocument(app: AnyElysia, options: DocumentOptions): () => OpenApiDocument {
  let built: OpenApiDocument | null = null
  return () => {
    if (built) return built
    const { paths, components } = toOpenAPISchema(app, { staticFile: false, paths: options.exclude }, undefined, undefined, OPENAPI_VERSION) as {
      paths: OpenApiDocument['paths']
      components: { schemas: Record<string, Schema> }
    }
    const { components: given, ...documentation } = options.documentation
    built = finishDocument({ ...documentation, openapi: OPENAPI_VERSION, paths, components: { ...given, schemas: components.schemas } }, options.formRoutes)
    return built
  }
}

/** The corrections, each for a whole kind of route (see each step). */
function finishDocument(doc: OpenApiDocument, formRoutes: ReadonlySet<string>): OpenApiDocument {
  for (const [path, operations] of Object.entries(doc.paths))
    for (const [method, operation] of Object.entries(operations)) {
      for (const parameter of operation.parameters ?? []) if (parameter.schema) parameter.schema = uncoerced(parameter.schema)
      const content = operation.requestBody?.content
      // The platform's one body parser reads a form for these routes (OAuth's token endpoint): the
      // document says so beside JSON, with the same schema (RFC 6749 §4.1.3 sends a form).
      if (content?.['application/json'] && formRoutes.has(`${method.toUpperCase()} ${elysiaPath(path)}`))
        content['application/x-www-form-urlencoded'] = { schema: content['application/json'].schema }
      for (const response of Object.values(operation.responses ?? {})) if (response.content) alsoServed(response.content)
    }
  return doc
}

/**
 * A number in a query string or path arrives as text; Elysia's `t.Integer` and `t.Number` accept it
 * as `anyOf: [{type: string, format: integer|numeric}, {type: integer|number, …}]` and coerce it.
 * OpenAPI describes a parameter by its value after serialisation is undone (a `limit=50` is the
 * integer 50), so the document keeps the number branch with the parameter's own keywords; the text
 * branch's `default: 0` (a number in a string schema) was also wrong in itself.
 */
function uncoerced(schema: Schema): Schema {
  const branches = schema.anyOf
  if (!Array.isArray(branches) || branches.length !== 2) return schema
  const text = branches.find((b: Schema) => b.type === 'string' && (b.format === 'integer' || b.format === 'numeric'))
  const number = branches.find((b: Schema) => b.type === 'integer' || b.type === 'number')
  if (!text || !number) return schema
  const { anyOf: _, ...own } = schema
  return { ...number, ...own }
}

/**
 * A JSON answer that can also be had as text (a report as CSV, by `format=csv` or Accept): its
 * schema names the other media types in `x-also-served` (`alsoServed()` in src/platform/schemas.ts),
 * which become media types of the same response beside application/json.
 */
function alsoServed(content: Content): void {
  const json = content['application/json']?.schema
  const also = json?.['x-also-served'] as Record<string, string> | undefined
  if (!json || !also) return
  const { 'x-also-served': _, ...schema } = json
  content['application/json'] = { ...content['application/json'], schema }
  for (const [mediaType, description] of Object.entries(also)) content[mediaType] = { schema: { type: 'string', description } }
}

/** "/api/v1/mcp/clients/{client_id}" → "/api/v1/mcp/clients/:client_id", as routes are keyed. */
const elysiaPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1')
