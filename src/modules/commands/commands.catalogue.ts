import { Type, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { FieldError } from '../../platform/problem'
import { valueErrorsToFields } from '../../platform/http'

/**
 * The command catalogue (docs/commands.md "Catalogue"): each type with its params schema,
 * schema_version and whether it is dangerous (a dangerous command created during an active rental
 * defaults to requires: after_rental).
 */
export type CommandType = { type: string; schemaVersion: number; dangerous: boolean; params: TSchema; description: string }

const strict = { additionalProperties: false }

export const CATALOGUE: CommandType[] = [
  {
    type: 'diagnostics.run',
    schemaVersion: 1,
    dangerous: false,
    params: Type.Object({}, strict),
    description: 'Collect a diagnostic report of the host and GPUs',
  },
  {
    // Dangerous in the catalogue's sense: DCGM's active tests load the GPUs, so during a rental it waits for the rental to end.
    type: 'diagnostics.dcgm',
    schemaVersion: 1,
    dangerous: true,
    params: Type.Object(
      {
        level: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: 2,
            description: 'dcgmi diag -r <level>: 1 quick deployment checks (seconds), 2 medium validation (about two minutes); default 1',
          }),
        ),
      },
      strict,
    ),
    description: "Run NVIDIA DCGM's active diagnostic (dcgmi diag -r 1 or 2) and report each GPU's result",
  },
  { type: 'agent.restart', schemaVersion: 1, dangerous: false, params: Type.Object({}, strict), description: 'Restart the agent process' },
  {
    type: 'agent.update',
    schemaVersion: 1,
    dangerous: false,
    params: Type.Object({ version: Type.String({ pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+$', maxLength: 32 }) }, strict),
    description: 'Update the agent to a version',
  },
  {
    type: 'gpu.set_power_limit',
    schemaVersion: 1,
    dangerous: false,
    params: Type.Object(
      { gpu_index: Type.Union([Type.Integer({ minimum: 0, maximum: 127 }), Type.Null()]), watts: Type.Integer({ minimum: 50, maximum: 1000 }) },
      strict,
    ),
    description: 'Set the power limit of one GPU (or all, gpu_index null)',
  },
  {
    type: 'gpu.reset',
    schemaVersion: 1,
    dangerous: true,
    params: Type.Object({ gpu_index: Type.Integer({ minimum: 0, maximum: 127 }) }, strict),
    description: 'Reset one GPU',
  },
  { type: 'reboot', schemaVersion: 1, dangerous: true, params: Type.Object({}, strict), description: 'Reboot the host' },
  {
    type: 'docker.restart',
    schemaVersion: 1,
    dangerous: true,
    params: Type.Object({}, strict),
    description: "Restart the container runtime (systemctl restart docker): every container on the host restarts, a renter's too",
  },
]

const checks = new Map<string, TypeCheck<TSchema>>(CATALOGUE.map((c) => [c.type, TypeCompiler.Compile(c.params)]))

export function commandType(type: string): CommandType | undefined {
  return CATALOGUE.find((c) => c.type === type)
}

/** Field errors of params against the type's schema, as pointers under /params. */
export function paramsErrors(type: string, params: unknown): FieldError[] {
  const check = checks.get(type)!
  return check.Check(params) ? [] : valueErrorsToFields(check.Errors(params), '/params')
}
