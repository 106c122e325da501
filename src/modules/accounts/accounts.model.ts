import { Type } from '@sinclair/typebox'
import { DisplayText, Nullable } from '../../platform/schemas'

const Email = Type.String({ format: 'email', maxLength: 254 })
const CaptchaToken = Type.Optional(
  Nullable(Type.String({ maxLength: 2048, description: 'Captcha token; required whenever GET /auth/config reports captcha.enabled' })),
)

export const AuthConfig = Type.Object({
  signup_enabled: Type.Boolean(),
  captcha: Type.Object({
    enabled: Type.Boolean(),
    provider: Nullable(Type.Literal('turnstile')),
    site_key: Nullable(Type.String({ description: 'Public site key for the captcha widget, when configured' })),
  }),
  password: Type.Object({ min_length: Type.Integer(), max_length: Type.Integer() }),
  code: Type.Object({ length: Type.Integer(), ttl_seconds: Type.Integer(), max_attempts: Type.Integer(), resend_cooldown_seconds: Type.Integer() }),
  demo: Type.Optional(
    Type.Object(
      { email: Email, password: Type.String() },
      {
        description:
          'Only on a service started by `scripts/start --demo` (never in production): the throwaway demo account, so the web console signs straight in. Absent everywhere else.',
      },
    ),
  ),
})

export const SignupStart = Type.Object(
  {
    email: Email,
    tenant_name: DisplayText({ minLength: 1, maxLength: 128, description: 'Display name of the tenant created at the complete step' }),
    captcha_token: CaptchaToken,
  },
  { additionalProperties: false },
)
export const CodeSent = Type.Object({ resend_cooldown_seconds: Type.Integer({ minimum: 1, maximum: 3600 }) })

export const CodeCheck = Type.Object(
  { email: Email, code: Type.String({ pattern: '^[0-9]{6}$', description: 'The 6-digit code from the email' }) },
  { additionalProperties: false },
)
export const Ticket = Type.Object({ ticket: Type.String({ maxLength: 64, description: 'Single-use, purpose-scoped, valid 10 minutes' }) })

export const SetPassword = Type.Object(
  {
    ticket: Type.String({ minLength: 1, maxLength: 64 }),
    password: Type.String({ minLength: 1, maxLength: 1024, description: '8 to 256 characters; the most common passwords are refused (422 too_common)' }),
  },
  { additionalProperties: false },
)

export const ResetStart = Type.Object({ email: Email, captcha_token: CaptchaToken }, { additionalProperties: false })

export const SignIn = Type.Object(
  { email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }), captcha_token: CaptchaToken },
  { additionalProperties: false },
)
