import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { get, request } from '../lib/api'
import { useResource } from '../lib/resource'
import { href, navigate } from '../lib/router'
import { type Me, sessionStarted, signedOutReason } from '../lib/session'
import type { AuthConfig, CodeCheckBody, CodeSent, ResetStartBody, SetPasswordBody, SignInBody, SignupStartBody, Ticket } from '../lib/api-types'
import { Form, TextField, useForm } from '../ui/form'
import { ThemePicker } from '../ui/layout'
import { Async } from '../ui/states'

/**
 * Sign in, sign up with the emailed code, and password reset (docs/auth.md). Each flow is the API's
 * own steps: start (a code is mailed) → verify (the code buys a ticket) → complete (the ticket and a
 * password sign in). The ticket lives only in this page's memory.
 */

const useConfig = () => useResource(() => get<AuthConfig>('/auth/config'), [])

function AuthFrame({ title, children, foot }: { title: string; children: ComponentChildren; foot?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · gpuhq`
  }, [title])
  return (
    <div class="auth">
      <header class="auth-head">
        <span class="brand">gpuhq</span>
        <ThemePicker />
      </header>
      <main id="main" class="auth-card" tabindex={-1}>
        <h1>{title}</h1>
        {children}
        {foot && (
          <nav class="auth-foot" aria-label="Other ways in">
            {foot}
          </nav>
        )}
      </main>
    </div>
  )
}

function CaptchaNote({ config }: { config: AuthConfig }) {
  if (!config.captcha.enabled) return null
  return (
    <p class="note" role="note">
      This gpuhq asks for a captcha ({config.captcha.provider}), whose script the console does not load from outside this service. Sign in through the API with
      a captcha token, or ask your operator.
    </p>
  )
}

/**
 * The demo (`scripts/start --demo`) publishes its throwaway sign-in in GET /auth/config: the console
 * signs straight in with it, except after the member signed out (then a button offers it again).
 * No secret ever travels in an address.
 */
function DemoSignIn({ demo }: { demo: { email: string; password: string } }) {
  const form = useForm()
  const enter = () =>
    form.run(async () => {
      const { data } = await request<Me>('POST', '/auth/sessions', { body: demo satisfies SignInBody })
      await sessionStarted(data)
      navigate('/')
    })
  const auto = !signedOutReason.value
  useEffect(() => {
    if (auto) void enter()
  }, [])
  return (
    <div class="note" role="status">
      <p>
        This is the gpuhq demo: a throwaway account, <strong>{demo.email}</strong>, with a populated fleet.
        {form.busy && ' Signing in…'}
      </p>
      {form.error && <p class="inline-error">{form.error.problem.detail ?? form.error.problem.title}</p>}
      {!form.busy && (
        <button type="button" class="primary" onClick={() => void enter()}>
          Enter the demo
        </button>
      )}
    </div>
  )
}

export function SignIn() {
  const config = useConfig()
  const form = useForm()
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const reason = signedOutReason.value
  return (
    <AuthFrame
      title="Sign in"
      foot={
        <>
          <a href={href('/reset')}>Forgot your password?</a>
          {config.data?.signup_enabled && <a href={href('/signup')}>Create an account</a>}
        </>
      }
    >
      {reason && (
        <p class="note" role="status">
          {reason}
        </p>
      )}
      <Async r={config}>{(c) => (c.demo ? <DemoSignIn demo={c.demo} /> : <CaptchaNote config={c} />)}</Async>
      <Form
        form={form}
        submit="Sign in"
        busyLabel="Signing in…"
        onSubmit={async () => {
          const { data } = await request<Me>('POST', '/auth/sessions', { body: { email, password } satisfies SignInBody })
          await sessionStarted(data)
          navigate('/')
        }}
      >
        <TextField form={form} name="/email" label="Email" type="email" autocomplete="username" required value={email} onInput={setEmail} />
        <TextField
          form={form}
          name="/password"
          label="Password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={setPassword}
        />
      </Form>
    </AuthFrame>
  )
}

type Step = 'start' | 'code' | 'password'

/** The three steps shared by signup and reset. */
function CodeFlow({ kind }: { kind: 'signup' | 'reset' }) {
  const config = useConfig()
  const [step, setStep] = useState<Step>('start')
  const [email, setEmail] = useState('')
  const [tenant, setTenant] = useState('')
  const [code, setCode] = useState('')
  const [password, setPassword] = useState('')
  const [ticket, setTicket] = useState('')
  const [cooldownUntil, setCooldownUntil] = useState(0)
  const [now, setNow] = useState(Date.now())
  const start = useForm()
  const verify = useForm()
  const complete = useForm()
  const base = kind === 'signup' ? '/auth/signup' : '/auth/password-reset'
  useEffect(() => {
    if (cooldownUntil <= now) return
    const t = setTimeout(() => setNow(Date.now()), 1000)
    return () => clearTimeout(t)
  }, [cooldownUntil, now])
  const wait = Math.max(0, Math.ceil((cooldownUntil - now) / 1000))

  const send = async () => {
    const body: SignupStartBody | ResetStartBody = kind === 'signup' ? { email, tenant_name: tenant } : { email }
    const { data } = await request<CodeSent>('POST', `${base}/start`, { body })
    setCooldownUntil(Date.now() + data.resend_cooldown_seconds * 1000)
    setNow(Date.now())
    setStep('code')
  }
  const title = kind === 'signup' ? 'Create your account' : 'Reset your password'
  const foot = (
    <>
      <a href={href('/signin')}>Sign in instead</a>
    </>
  )
  if (kind === 'signup' && config.data && !config.data.signup_enabled)
    return (
      <AuthFrame title={title} foot={foot}>
        <p class="note">Signup is switched off on this gpuhq. Ask its operator for an account.</p>
      </AuthFrame>
    )
  return (
    <AuthFrame title={title} foot={foot}>
      <Async r={config}>{(c) => <CaptchaNote config={c} />}</Async>
      <ol class="steps" aria-label="Steps">
        <li aria-current={step === 'start' ? 'step' : undefined}>Your email</li>
        <li aria-current={step === 'code' ? 'step' : undefined}>The code we mail you</li>
        <li aria-current={step === 'password' ? 'step' : undefined}>{kind === 'signup' ? 'Your password' : 'A new password'}</li>
      </ol>
      {step === 'start' && (
        <Form form={start} submit="Email me a code" busyLabel="Sending…" onSubmit={send}>
          <TextField form={start} name="/email" label="Email" type="email" autocomplete="email" required value={email} onInput={setEmail} />
          {kind === 'signup' && (
            <TextField
              form={start}
              name="/tenant_name"
              label="Account name"
              hint="What your fleet is called, for example your company's name."
              autocomplete="organization"
              required
              value={tenant}
              onInput={setTenant}
            />
          )}
        </Form>
      )}
      {step === 'code' && (
        <Form
          form={verify}
          submit="Check the code"
          busyLabel="Checking…"
          onSubmit={async () => {
            const { data } = await request<Ticket>('POST', `${base}/verify`, { body: { email, code: code.trim() } satisfies CodeCheckBody })
            setTicket(data.ticket)
            setStep('password')
          }}
          secondary={
            <button type="button" disabled={wait > 0 || start.busy} onClick={() => void start.run(send).then(() => setCode(''))}>
              {wait > 0 ? `Send a new code (in ${wait} s)` : 'Send a new code'}
            </button>
          }
        >
          <p role="status">
            {kind === 'signup'
              ? `We sent a ${config.data?.code.length ?? 6}-digit code to ${email}.`
              : `If ${email} has an account, we sent it a ${config.data?.code.length ?? 6}-digit code.`}{' '}
            It is valid for {Math.round((config.data?.code.ttl_seconds ?? 600) / 60)} minutes.
          </p>
          <TextField
            form={verify}
            name="/code"
            label="Code"
            inputMode="numeric"
            autocomplete="one-time-code"
            pattern="[0-9]*"
            maxLength={config.data?.code.length ?? 6}
            required
            value={code}
            onInput={setCode}
          />
          {start.error && (
            <p class="inline-error" role="alert">
              {start.error.problem.detail ?? start.error.problem.title}
            </p>
          )}
        </Form>
      )}
      {step === 'password' && (
        <Form
          form={complete}
          submit={kind === 'signup' ? 'Create the account' : 'Set the password and sign in'}
          busyLabel="Saving…"
          onSubmit={async () => {
            const { data } = await request<Me>('POST', `${base}/complete`, { body: { ticket, password } satisfies SetPasswordBody })
            await sessionStarted(data)
            navigate('/')
          }}
        >
          <TextField
            form={complete}
            name="/password"
            label={kind === 'signup' ? 'Password' : 'New password'}
            hint={`At least ${config.data?.password.min_length ?? 8} characters. A long phrase is best; very common passwords are refused.`}
            type="password"
            autocomplete="new-password"
            required
            value={password}
            onInput={setPassword}
          />
        </Form>
      )}
    </AuthFrame>
  )
}

export const SignUp = () => <CodeFlow kind="signup" />
export const Reset = () => <CodeFlow kind="reset" />
