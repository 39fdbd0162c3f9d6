import { createSignal, For, onMount, Show } from 'solid-js'
import { ApiFailure, explain, money } from './api'
import { createFill, TextField } from './forms'
import { can } from './session'
import { createAction, NoteLine } from './ui'
import './records.css'

/** A tag as `GET /api/tags` answers it (contract §2). */
export interface Tag {
  id: number
  name: string
  color: string
}

const HEX = /^#[0-9a-fA-F]{6}$/

/** sRGB relative luminance (WCAG 2), to pick the text color that reads on a tag's own color. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/**
 * Black or white, whichever contrasts more with the background: for any color one of them reaches 4.5:1, so a tag's
 * name stays readable whatever color the manager picked.
 */
export function inkOn(hex: string): string {
  if (!HEX.test(hex)) return '#000000'
  const l = luminance(hex)
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? '#000000' : '#ffffff'
}

export function TagChip(props: { tag: Pick<Tag, 'name' | 'color'> }) {
  return (
    <span class="tag" style={{ background: props.tag.color, color: inkOn(props.tag.color) }} data-testid="tag-chip">
      {props.tag.name}
    </span>
  )
}

export async function loadTags(): Promise<Tag[]> {
  return (await money<{ data: Tag[] }>('GET', '/api/tags')).data
}

/** Colors offered first; any other is one click away in the picker. */
const SUGGESTED = ['#1f5fbf', '#1d6b31', '#a4231a', '#7a4f00', '#6b3fa0', '#0e7490', '#be185d', '#4f5b66']

export function Tags() {
  const [tags, setTags] = createSignal<Tag[] | null>(null)
  const [name, setName] = createSignal('')
  const [color, setColor] = createSignal(SUGGESTED[0])
  const [errors, setErrors] = createSignal<{ name?: string; color?: string }>({})
  const list = createAction()
  const create = createAction((e) => (e instanceof ApiFailure && e.code === 'VALIDATION_ERROR' ? 'Revise el nombre (hasta 100 caracteres) y el color.' : explain(e)))
  const fill = createFill()
  const load = () => list.run(async () => void setTags(await loadTags()))
  onMount(load)

  const add = (e: Event) => {
    e.preventDefault()
    const found: { name?: string; color?: string } = {}
    const n = name().trim()
    if (!n) found.name = 'Escriba el nombre de la etiqueta.'
    else if (n.length > 100) found.name = 'El nombre tiene como máximo 100 caracteres.'
    else if (tags()?.some((t) => t.name.toLowerCase() === n.toLowerCase())) found.name = `Ya hay una etiqueta «${n}». Elija otro nombre.`
    if (!HEX.test(color())) found.color = 'El color se escribe #RRGGBB, por ejemplo #1f5fbf.'
    setErrors(found)
    if (found.name || found.color) return
    const body = { name: n, color: color().toLowerCase() }
    void create.run(async () => {
      const made = await money<Tag>('POST', '/api/tags', body, fill.headers(body))
      fill.done()
      setName('')
      setTags([...(tags() ?? []), made].sort((a, b) => a.name.localeCompare(b.name, 'es')))
      return `Etiqueta «${made.name}» creada. Se asigna desde la ficha de cada cliente.`
    })
  }

  return (
    <section class="panel" data-testid="tags-section">
      <h1>Etiquetas</h1>
      <p class="muted">Las etiquetas agrupan clientes y cajas (por ejemplo «Mayorista» o «Turismo»); se asignan en la ficha de cada uno.</p>
      <Show when={can('clients.edit')}>
        <form class="sub stack" onSubmit={add} novalidate data-testid="tag-create">
          <h2>Etiqueta nueva</h2>
          <div class="inline fields">
            <TextField label="Nombre" name="name" id="tag-name" maxlength={100} value={name()} error={errors().name} onInput={(v) => (setName(v), setErrors({ ...errors(), name: undefined }))} />
            <label>
              Color
              <input type="color" name="color" class="swatch" value={HEX.test(color()) ? color() : '#000000'} onInput={(e) => setColor(e.currentTarget.value)} />
            </label>
            <TextField
              label="Código del color"
              name="color-code"
              id="tag-color"
              class="code-hex"
              maxlength={7}
              value={color()}
              error={errors().color}
              onInput={(v) => (setColor(v.trim()), setErrors({ ...errors(), color: undefined }))}
            />
            <div class="preview-chip" aria-live="polite">
              <span class="muted small">Así se verá:</span> <TagChip tag={{ name: name().trim() || 'Etiqueta', color: HEX.test(color()) ? color() : '#ffffff' }} />
            </div>
          </div>
          <div class="swatches" role="group" aria-label="Colores sugeridos">
            <For each={SUGGESTED}>
              {(c) => (
                <button type="button" class="swatch-button" style={{ background: c }} aria-label={`Usar el color ${c}`} aria-pressed={color().toLowerCase() === c} onClick={() => setColor(c)} />
              )}
            </For>
          </div>
          <div class="row">
            <button type="submit" class="primary" disabled={create.busy()} data-testid="tag-save">
              Crear etiqueta
            </button>
          </div>
          <NoteLine note={create.note()} testid="tag-message" />
        </form>
      </Show>
      <h2>Etiquetas de la empresa</h2>
      <Show when={tags()} fallback={<p class="muted">Cargando…</p>}>
        {(all) => (
          <ul class="tag-list" data-testid="tag-list">
            <For each={all()} fallback={<li class="muted">Todavía no hay etiquetas.</li>}>
              {(t) => (
                <li data-testid="tag-row">
                  <TagChip tag={t} /> <span class="muted small">{t.color}</span>
                </li>
              )}
            </For>
          </ul>
        )}
      </Show>
      <NoteLine note={list.note()} />
    </section>
  )
}
