import type { ComponentChildren, JSX } from 'preact'
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import type { ApiError, FieldError } from '../lib/api'
import { fieldMessage, problemMessage } from '../lib/messages'
import { asApiError } from '../lib/resource'

/**
 * Forms send their values to the API and show its answer: each `errors[].path` of a problem document
 * (a JSON pointer such as `/email` or `/quiet_hours/from`) next to the field registered under that
 * pointer, and the rest (the detail, errors no field owns) in a summary above the buttons. After a
 * refusal the focus moves to the first field in error, else to the summary.
 */

let seq = 0

export type FormApi = {
  id: string
  error: ApiError | null
  busy: boolean
  errorsFor: (pointer: string) => FieldError[]
  register: (pointer: string) => void
  /** Whether a field of this form shows errors at this pointer. */
  owns: (error: FieldError) => boolean
  run: (fn: () => Promise<unknown>) => Promise<void>
  reset: () => void
  fail: (e: ApiError) => void
}

export function useForm(): FormApi {
  const [error, setError] = useState<ApiError | null>(null)
  const [busy, setBusy] = useState(false)
  const id = useMemo(() => `f${++seq}`, [])
  const fields = useRef(new Set<string>())
  fields.current = new Set()
  return {
    id,
    error,
    busy,
    errorsFor: (pointer) => (error?.problem.errors ?? []).filter((e) => e.path === pointer || e.path.startsWith(`${pointer}/`)),
    register: (pointer) => {
      fields.current.add(pointer)
    },
    run: async (fn) => {
      if (busy) return
      setBusy(true)
      setError(null)
      try {
        await fn()
      } catch (e) {
        setError(asApiError(e))
      } finally {
        setBusy(false)
      }
    },
    // The summary asks this after the fields rendered (they come before it in the form).
    owns: (f) => [...fields.current].some((p) => f.path === p || f.path.startsWith(`${p}/`)),
    reset: () => setError(null),
    fail: setError,
  }
}

type FormProps = {
  form: FormApi
  onSubmit: () => Promise<unknown>
  submit: string
  busyLabel?: string
  label?: string
  children: ComponentChildren
  secondary?: ComponentChildren
  class?: string
}

export function Form({ form, onSubmit, submit, busyLabel, label, children, secondary, class: cls }: FormProps) {
  const ref = useRef<HTMLFormElement>(null)
  useEffect(() => {
    if (!form.error) return
    const target = ref.current?.querySelector<HTMLElement>('[aria-invalid="true"]') ?? ref.current?.querySelector<HTMLElement>('.form-error')
    target?.focus()
  }, [form.error])
  return (
    <form
      ref={ref}
      class={cls ?? 'form'}
      noValidate
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault()
        void form.run(onSubmit)
      }}
    >
      {children}
      <FormError form={form} />
      <div class="actions">
        <button type="submit" class="primary" disabled={form.busy} aria-busy={form.busy}>
          {form.busy ? (busyLabel ?? 'Working…') : submit}
        </button>
        {secondary}
      </div>
    </form>
  )
}

function FormError({ form }: { form: FormApi }) {
  const e = form.error
  if (!e) return null
  const loose = (e.problem.errors ?? []).filter((f) => !form.owns(f))
  return (
    <div class="form-error" role="alert" tabindex={-1}>
      <p>{problemMessage(e)}</p>
      {loose.length > 0 && (
        <ul>
          {loose.map((f) => (
            <li key={f.path + f.code}>
              {f.path ? <code>{f.path}</code> : 'The request'}: {fieldMessage(f)}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

type ControlProps = {
  id: string
  name: string
  'aria-invalid': boolean
  'aria-describedby'?: string
}

type FieldProps = {
  form: FormApi
  /** The JSON pointer the API names this field by in a problem document. */
  name: string
  label: ComponentChildren
  hint?: ComponentChildren
  children: (props: ControlProps) => JSX.Element
  class?: string
}

export function Field({ form, name, label, hint, children, class: cls }: FieldProps) {
  form.register(name)
  const id = `${form.id}${name.replaceAll('/', '-')}`
  const errors = form.errorsFor(name)
  const described = [hint ? `${id}-hint` : '', errors.length ? `${id}-error` : ''].filter(Boolean).join(' ')
  return (
    <div class={`field${errors.length ? ' invalid' : ''}${cls ? ` ${cls}` : ''}`}>
      <label for={id}>{label}</label>
      {children({ id, name: name.slice(1), 'aria-invalid': errors.length > 0, 'aria-describedby': described || undefined })}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {errors.length > 0 && (
        <p class="field-error" id={`${id}-error`}>
          {errors.map(fieldMessage).join(' ')}
        </p>
      )}
    </div>
  )
}

type Input = {
  type?: 'text' | 'email' | 'password' | 'number' | 'date' | 'time' | 'datetime-local' | 'search' | 'url'
  autocomplete?: string
  required?: boolean
  inputMode?: 'numeric' | 'decimal' | 'text' | 'email'
  pattern?: string
  maxLength?: number
  placeholder?: string
  min?: string | number
  max?: string | number
  step?: string | number
  readOnly?: boolean
  disabled?: boolean
  spellcheck?: boolean
}

export function TextField(
  props: { form: FormApi; name: string; label: ComponentChildren; hint?: ComponentChildren; value: string; onInput: (v: string) => void } & Input,
) {
  const { form, name, label, hint, value, onInput, ...rest } = props
  // `type` is cast to one literal: the JSX types give each input type its own attribute set.
  return (
    <Field form={form} name={name} label={label} hint={hint}>
      {(p) => <input {...rest} {...p} type={(rest.type ?? 'text') as 'text'} value={value} onInput={(e) => onInput(e.currentTarget.value)} />}
    </Field>
  )
}

export function SelectField(props: {
  form: FormApi
  name: string
  label: ComponentChildren
  hint?: ComponentChildren
  value: string
  onChange: (v: string) => void
  options: [string, string][]
  disabled?: boolean
}) {
  const { form, name, label, hint, value, onChange, options, disabled } = props
  return (
    <Field form={form} name={name} label={label} hint={hint}>
      {(p) => (
        <select {...p} value={value} disabled={disabled} onChange={(e) => onChange(e.currentTarget.value)}>
          {options.map(([v, text]) => (
            <option key={v} value={v}>
              {text}
            </option>
          ))}
        </select>
      )}
    </Field>
  )
}

export function CheckField(props: {
  form: FormApi
  name: string
  label: ComponentChildren
  checked: boolean
  onChange: (v: boolean) => void
  disabled?: boolean
}) {
  const { form, name, label, checked, onChange, disabled } = props
  form.register(name)
  const id = `${form.id}${name.replaceAll('/', '-')}`
  const errors = form.errorsFor(name)
  return (
    <div class={`field check${errors.length ? ' invalid' : ''}`}>
      <input
        type="checkbox"
        id={id}
        checked={checked}
        disabled={disabled}
        aria-invalid={errors.length > 0}
        aria-describedby={errors.length ? `${id}-error` : undefined}
        onChange={(e) => onChange(e.currentTarget.checked)}
      />
      <label for={id}>{label}</label>
      {errors.length > 0 && (
        <p class="field-error" id={`${id}-error`}>
          {errors.map(fieldMessage).join(' ')}
        </p>
      )}
    </div>
  )
}
